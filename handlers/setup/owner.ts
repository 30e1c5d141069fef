// POST /v1/setup/owner: creates the first owner during External Access setup. The owner signs in
// later through the chosen remote auth mode (OIDC or the trusted proxy) with this e-mail.
import { z } from "zod";
import { created, defineEndpoint } from "../../lib/http/route.ts";
import { fail } from "../../lib/http/errors.ts";
import { Email, UserResource } from "../../lib/schemas/shared.ts";
import { inTransaction } from "../../lib/db/client.ts";
import { countActiveOwners, insertUser } from "../../lib/auth/users.ts";
import { toUserResource } from "../../lib/auth/users.ts";

export const OwnerBody = z.object({ email: Email }).strict();

export const endpoint = defineEndpoint({
  operationId: "setup_create_owner",
  summary: "Create the first owner during first-run setup",
  body: OwnerBody,
  ...created({ user: UserResource }),
  errors: ["owner_exists"],
  async handle({ body }, ctx) {
    const user = await inTransaction(ctx.db, async (tx) => {
      if ((await countActiveOwners(tx)) > 0) fail("owner_exists", "An owner already exists; complete setup with POST /v1/setup/complete.");
      return insertUser(tx, { email: body.email, role: "owner", invitedBy: null, now: ctx.clock.now() });
    });
    return { user: toUserResource(user) };
  },
});
