// DELETE /v1/projects/{project_id}/members/{user_id} (project maintainer).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { removeMember } from "../../lib/projects/store.ts";

export const endpoint = defineEndpoint({
  operationId: "remove_project_member",
  summary: "Remove a project member",
  params: z.object({ project_id: IdParam, user_id: IdParam }),
  response: z.object({ removed: z.boolean() }),
  async handle({ params }, ctx) {
    if (!(await removeMember(ctx.db, params.project_id, params.user_id))) fail("not_found", "That user is not a member of the project.");
    return { removed: true };
  },
});
