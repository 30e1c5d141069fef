// DELETE /v1/projects/{project_id} (project maintainer): removes the project with its pipelines and builds.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { deleteProject } from "../../lib/projects/store.ts";

export const endpoint = defineEndpoint({
  operationId: "delete_project",
  summary: "Delete a project",
  params: z.object({ project_id: IdParam }),
  response: z.object({ deleted: z.boolean() }),
  async handle({ params }, ctx) {
    await deleteProject(ctx.db, params.project_id);
    return { deleted: true };
  },
});
