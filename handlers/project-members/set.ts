// PUT /v1/projects/{project_id}/members/{user_id} (project maintainer): adds a member or changes
// their project role.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { MemberResource, ProjectRoleSchema } from "../../lib/projects/wire.ts";
import { listMembers, setMember } from "../../lib/projects/store.ts";
import { findUserById } from "../../lib/auth/users.ts";

export const endpoint = defineEndpoint({
  operationId: "set_project_member",
  summary: "Add a project member or change their role",
  params: z.object({ project_id: IdParam, user_id: IdParam }),
  body: z.object({ role: ProjectRoleSchema }).strict(),
  response: z.object({ member: MemberResource }),
  async handle({ params, body }, ctx) {
    const user = await findUserById(ctx.db, params.user_id);
    if (!user || !user.active) fail("not_found", "No active user with that id.");
    await setMember(ctx.db, params.project_id, user.id, body.role, ctx.clock.now());
    const member = (await listMembers(ctx.db, params.project_id)).find((m) => m.user_id === user.id)!;
    return { member };
  },
});
