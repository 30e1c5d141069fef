// DELETE /v1/api-tokens/{token_id} (docs/api.md "API tokens"): admins and owners revoke any token,
// others only their own; a token the caller may not see answers 404 as if it did not exist.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { roleAtLeast } from "../../lib/auth/roles.ts";
import { findApiToken, revokeApiToken } from "../../lib/auth/api-tokens.ts";

export const endpoint = defineEndpoint({
  operationId: "revoke_api_token",
  summary: "Revoke an API token",
  authNote: "admins and owners revoke any token, others their own",
  params: z.object({ token_id: z.string().min(1).max(64) }),
  response: z.object({ revoked: z.boolean() }),
  errors: ["token_not_found"],
  async handle({ params }, ctx: UserContext) {
    const caller = ctx.principal;
    const token = await findApiToken(ctx.db, params.token_id);
    const visible = token && (roleAtLeast(caller.role, "admin") || token.created_by === caller.user.id);
    if (!token || !visible) fail("token_not_found", "No API token with that id.");
    await revokeApiToken(ctx.db, token.id, ctx.clock.now());
    ctx.log.info("api token revoked", { request_id: ctx.requestId, token_id: token.id, by: caller.user.id });
    return { revoked: true };
  },
});
