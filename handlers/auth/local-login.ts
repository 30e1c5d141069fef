// POST /v1/auth/local/login (docs/api.md "Authentication").
// Loopback only, decided by the socket peer. In Local Only mode the first login creates the owner
// and makes the instance ready. Once the instance is ready, in either mode, every login spends a
// one-time capability minted over the Unix management socket (`roost login` or `roost recover`):
// loopback alone proves nothing, because every process on this host is loopback, build steps on
// a runner included (docs/runners.md "Build code and the daemon's host").
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { fail } from "../../lib/http/errors.ts";
import { Email, SessionResult } from "../../lib/schemas/shared.ts";
import { inTransaction, type Executor } from "../../lib/db/client.ts";
import { getInstance, markReady, runtimeMode } from "../../lib/setup/instance.ts";
import { findUserByEmail, insertUser, listActiveUsers, type User } from "../../lib/auth/users.ts";
import { consumeRecoveryCapability, deleteSetupTokens } from "../../lib/auth/one-time-credentials.ts";
import { isLoopbackAddress, isLoopbackHostHeader, isLoopbackOrigin } from "../../lib/net/addresses.ts";
import { completeLogin } from "../../lib/auth/login.ts";
import { removeSetupTokenFile } from "../../lib/setup/token-file.ts";

export const LocalLoginBody = z
  .object({
    email: Email.optional().describe("optional when exactly one active user exists"),
    recovery_capability: z
      .string()
      .max(200)
      .optional()
      .describe("roost_rcv_… from `roost login` or `roost recover` on the host; required once the instance is ready"),
  })
  .strict();

export const endpoint = defineEndpoint({
  operationId: "local_login",
  summary: "Sign in from this machine's loopback",
  authNote: "loopback socket peers only; after the first run a one-time capability from `roost login` (Local Only) or `roost recover` (External Access)",
  body: LocalLoginBody,
  response: SessionResult,
  browserSession: "set",
  errors: [
    "email_required",
    "mode_restricted",
    "local_login_loopback_required",
    "local_login_host_not_allowed",
    "local_login_origin_not_allowed",
    "user_not_found",
    "recovery_capability_required",
    "local_capability_required",
    "recovery_capability_invalid",
  ],
  async handle({ body }, ctx) {
    // 1. Loopback, by the socket peer; and a Host/Origin that only this machine's own clients
    //    send, so a web page cannot reach it through the victim's browser (CSRF, DNS rebinding).
    if (!isLoopbackAddress(ctx.peer)) fail("local_login_loopback_required", "Local login is accepted only from this machine's loopback.");
    if (!isLoopbackHostHeader(ctx.request.headers.get("host"))) {
      fail("local_login_host_not_allowed", "Local login needs a loopback Host (localhost, 127.0.0.1 or [::1]).");
    }
    if (!isLoopbackOrigin(ctx.request.headers.get("origin"))) {
      fail("local_login_origin_not_allowed", "Local login refuses requests from a web page of another origin.");
    }

    const now = ctx.clock.now();
    const instance = await getInstance(ctx.db);
    const mode = runtimeMode(instance);

    // 2. First run, Local Only: this login creates the owner (or signs in the one created by setup) and finishes setup.
    if (instance.state === "incomplete") {
      if (mode === "remote") fail("mode_restricted", "Setup is incomplete in External Access mode; finish it with the setup token (README).");
      const user = await inTransaction(ctx.db, async (tx) => {
        const active = await listActiveUsers(tx, 2);
        const owner = active.length === 0 ? await createOwner(tx, body.email, now) : await resolveUser(tx, body.email, active);
        await markReady(tx, now);
        await deleteSetupTokens(tx);
        return owner;
      });
      await removeSetupTokenFile(ctx.config.dataDir);
      return completeLogin(ctx, user, "local");
    }

    // 3. Ready: loopback alone is not enough. In External Access a reverse proxy on this host makes
    //    everything loopback; in Local Only any process on this host is loopback, including a build
    //    step that a pull request's code controls. The caller must prove access to the 0600
    //    management socket in the data directory, which only the operator has.
    if (!body.recovery_capability) {
      if (mode === "remote") fail("recovery_capability_required", "In External Access mode, local login needs a recovery capability from `roost recover`.");
      fail("local_capability_required", "Setup is complete, so local login needs a one-time capability: run `roost login` on this host as the daemon's user.");
    }
    //    The capability is a database row, so it works on every daemon of the database; it is spent
    //    in the transaction that picks the user, so a refused sign-in (no such user) leaves it unspent.
    const capability = body.recovery_capability;
    const user = await inTransaction(ctx.db, async (tx) => {
      if (!(await consumeRecoveryCapability(tx, capability, now))) {
        if (mode === "remote")
          fail("recovery_capability_invalid", "The recovery capability is unknown, expired or already used; mint a new one with `roost recover`.");
        fail("recovery_capability_invalid", "The capability is unknown, expired or already used; run `roost login` on this host for a new one.");
      }
      return resolveUser(tx, body.email, await listActiveUsers(tx, 2));
    });
    return completeLogin(ctx, user, "local");
  },
});

async function createOwner(db: Executor, email: string | undefined, now: number): Promise<User> {
  if (!email) fail("email_required", "No owner exists yet: send the e-mail address of the owner to create.");
  return insertUser(db, { email, role: "owner", invitedBy: null, now });
}

/** `email` picks the user; without it there must be exactly one active user, so the choice is never a guess. */
async function resolveUser(db: Executor, email: string | undefined, firstActive: User[]): Promise<User> {
  if (email) {
    const user = await findUserByEmail(db, email);
    if (!user || !user.active) fail("user_not_found", "No active user has that e-mail address; ask an admin for an invitation.");
    return user;
  }
  if (firstActive.length > 1) fail("email_required", "Several users exist: send the e-mail address to sign in as.");
  if (firstActive.length === 0) fail("user_not_found", "No active user exists.");
  return firstActive[0]!;
}
