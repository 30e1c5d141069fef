// GET /v1/projects/{project_id}/members (project viewer).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { MemberResource } from "../../lib/projects/wire.ts";
import { listMembers } from "../../lib/projects/store.ts";

export const endpoint = defineEndpoint({
  operationId: "list_project_members",
  summary: "List a project's members",
  params: z.object({ project_id: IdParam }),
  response: z.object({ members: z.array(MemberResource) }),
  async handle({ params }, ctx) {
    return { members: await listMembers(ctx.db, params.project_id) };
  },
});
