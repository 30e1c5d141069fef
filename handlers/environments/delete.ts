// DELETE /v1/projects/{project_id}/environments/{environment} (project maintainer): the
// environment and its secrets; its deployments stay in the record, with its name.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { EnvironmentName, deleteEnvironment } from "../../lib/publishing/environments.ts";

export const endpoint = defineEndpoint({
  operationId: "delete_environment",
  summary: "Delete an environment and its secrets",
  params: z.object({ environment: EnvironmentName }),
  response: z.object({ deleted: z.boolean() }),
  async handle({ params }, ctx: ProjectContext) {
    if (!(await deleteEnvironment(ctx.db, ctx.project.id, params.environment))) fail("not_found", `No environment ${params.environment} in this project.`);
    return { deleted: true };
  },
});
