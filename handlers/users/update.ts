// PATCH /v1/users/{user_id} (admin): change a user's role, or deactivate/reactivate them.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { UserResource } from "../../lib/schemas/shared.ts";
import { RoleSchema } from "../../lib/auth/roles.ts";
import { toUserResource } from "../../lib/auth/users.ts";
import { changeUser } from "../../lib/auth/user-admin.ts";

export const UpdateUserBody = z
  .object({ role: RoleSchema.optional(), active: z.boolean().optional() })
  .strict()
  .refine((b) => b.role !== undefined || b.active !== undefined, { message: "send role and/or active" });

export const endpoint = defineEndpoint({
  operationId: "update_user",
  summary: "Change a user's role or active flag",
  authNote: "nobody changes a user ranked above them",
  params: z.object({ user_id: z.string().min(1).max(64) }),
  body: UpdateUserBody,
  response: z.object({ user: UserResource }),
  errors: ["role_not_allowed", "last_owner", "not_found"],
  async handle({ params, body }, ctx: UserContext) {
    const user = await changeUser(ctx.db, ctx.principal, params.user_id, body, ctx.clock.now());
    return { user: toUserResource(user) };
  },
});
