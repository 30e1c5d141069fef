// GET /v1/users/me: who the credential belongs to, and the role it acts with.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { UserResource } from "../../lib/schemas/shared.ts";
import { RoleSchema } from "../../lib/auth/roles.ts";
import { toUserResource } from "../../lib/auth/users.ts";

export const MeResult = z.object({
  user: UserResource,
  credential: z.object({
    kind: z.enum(["session", "api_token"]),
    effective_role: RoleSchema.describe("an API token acts with the lower of its role and its creator's"),
    expires_at: z.number().int(),
  }),
});

export const endpoint = defineEndpoint({
  operationId: "get_current_user",
  summary: "The signed-in user",
  response: MeResult,
  async handle(_input, ctx: UserContext) {
    const p = ctx.principal;
    return { user: toUserResource(p.user), credential: { kind: p.kind, effective_role: p.role, expires_at: p.credentialExpiresAt } };
  },
});
