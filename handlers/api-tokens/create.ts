// POST /v1/api-tokens (docs/api.md "API tokens"): the plaintext token is in this response and nowhere else.
// A token never outranks or outlives its creator (docs/authorization.md "Roles").
import { z } from "zod";
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { ApiTokenCreated, DisplayName } from "../../lib/schemas/shared.ts";
import { RoleSchema, roleAtLeast } from "../../lib/auth/roles.ts";
import { insertApiToken } from "../../lib/auth/api-tokens.ts";
import { displayPrefix } from "../../lib/auth/secrets.ts";

export const TOKEN_EXPIRY_DEFAULT_DAYS = 90;
export const TOKEN_EXPIRY_MAX_DAYS = 365;

export const CreateTokenBody = z
  .object({
    name: DisplayName,
    role: RoleSchema.describe("at most the caller's own role"),
    expires_in_days: z
      .number()
      .int()
      .min(1)
      .max(TOKEN_EXPIRY_MAX_DAYS)
      .default(TOKEN_EXPIRY_DEFAULT_DAYS)
      .describe(`lifetime in days, default ${TOKEN_EXPIRY_DEFAULT_DAYS}, at most ${TOKEN_EXPIRY_MAX_DAYS}`),
  })
  .strict();

export const endpoint = defineEndpoint({
  operationId: "create_api_token",
  summary: "Create an API token",
  authNote: "never above the caller's role or past the credential's expiry",
  body: CreateTokenBody,
  ...created(ApiTokenCreated),
  errors: ["role_not_allowed"],
  async handle({ body }, ctx: UserContext) {
    const caller = ctx.principal;
    if (!roleAtLeast(caller.role, body.role)) fail("role_not_allowed", `You cannot create a ${body.role} token; your role is ${caller.role}.`);
    const now = ctx.clock.now();
    let expiresAt = now + body.expires_in_days * 86_400;
    // A token minted with a token may not outlive it.
    if (caller.kind === "api_token") expiresAt = Math.min(expiresAt, caller.credentialExpiresAt);
    const { token, row } = await insertApiToken(ctx.db, {
      name: body.name,
      role: body.role,
      createdBy: caller.user.id,
      createdByEmail: caller.user.email,
      now,
      expiresAt,
    });
    ctx.log.info("api token created", { request_id: ctx.requestId, token_id: row.id, user_id: caller.user.id, role: row.role });
    return { id: row.id, name: row.name, prefix: displayPrefix("pat", row.id), role: row.role, created_at: row.created_at, expires_at: row.expires_at, token };
  },
});
