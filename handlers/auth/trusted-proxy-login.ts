// POST /v1/auth/trusted-proxy/login (docs/external-access.md, "With a trusted proxy"): the proxy in
// front of Roost has authenticated the user and names them in one header. Trust comes from the
// socket peer alone (ctx.peer), never from X-Forwarded-For; every login is a new session.
import { defineEndpoint } from "../../lib/http/route.ts";
import { fail } from "../../lib/http/errors.ts";
import { SessionResult } from "../../lib/schemas/shared.ts";
import { getTrustedProxySettings } from "../../lib/auth/sign-in-settings-store.ts";
import { findUserByEmail } from "../../lib/auth/users.ts";
import { forwardedIdentity, isTrustedPeer } from "../../lib/auth/trusted-proxy.ts";
import { completeLogin } from "../../lib/auth/login.ts";
import { requireReadyInstance } from "../../lib/auth/ready.ts";

export const endpoint = defineEndpoint({
  operationId: "trusted_proxy_login",
  summary: "Sign in as the user named by the trusted proxy",
  description: "Headers: the identity header (default X-Roost-User-Email) and, when configured, X-Roost-Trusted-Proxy-Secret.",
  authNote: "only from a trusted proxy socket peer with its shared secret",
  response: SessionResult,
  browserSession: "set",
  errors: [
    "setup_incomplete",
    "mode_restricted",
    "trusted_proxy_peer_not_allowed",
    "trusted_proxy_shared_secret_missing",
    "trusted_proxy_shared_secret_invalid",
    "trusted_proxy_identity_missing",
    "trusted_proxy_identity_invalid",
    "user_not_found",
  ],
  async handle(_input, ctx) {
    // 1. Ready, in External Access with trusted_proxy, from a trusted peer.
    const instance = await requireReadyInstance(ctx.db);
    const settings = await getTrustedProxySettings(ctx.db);
    if (instance.runtime_mode !== "remote" || instance.remote_auth_mode !== "trusted_proxy" || !settings) {
      fail("mode_restricted", "Trusted-proxy sign-in is available only in External Access mode with a trusted proxy.");
    }
    if (!isTrustedPeer(settings, ctx.peer)) {
      ctx.log.warn("trusted proxy login from untrusted peer", { request_id: ctx.requestId, peer: ctx.peer });
      fail("trusted_proxy_peer_not_allowed", "This request did not come from a trusted proxy.");
    }

    // 2. Shared secret, then exactly one valid e-mail in the identity header.
    const email = forwardedIdentity(settings, ctx.request.headers);

    // 3. An invited, active user; a new session.
    const user = await findUserByEmail(ctx.db, email);
    if (!user || !user.active) fail("user_not_found", "No active user has the forwarded e-mail address; ask an admin for an invitation.");
    return completeLogin(ctx, user, "trusted_proxy");
  },
});
