// DELETE /v1/users/{user_id} (admin): deactivates a user. The row stays for audit attribution;
// their sessions end and their API tokens stop working (a token never outlives its creator).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { UserResource } from "../../lib/schemas/shared.ts";
import { toUserResource } from "../../lib/auth/users.ts";
import { changeUser } from "../../lib/auth/user-admin.ts";

export const endpoint = defineEndpoint({
  operationId: "deactivate_user",
  summary: "Deactivate a user",
  authNote: "nobody deactivates a user ranked above them",
  params: z.object({ user_id: z.string().min(1).max(64) }),
  response: z.object({ user: UserResource }),
  errors: ["last_owner", "not_found"],
  async handle({ params }, ctx: UserContext) {
    const user = await changeUser(ctx.db, ctx.principal, params.user_id, { active: false }, ctx.clock.now());
    return { user: toUserResource(user) };
  },
});
