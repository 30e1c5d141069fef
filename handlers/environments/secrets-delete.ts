// DELETE /v1/projects/{project_id}/environments/{environment}/secrets/{key} (project maintainer).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { EnvironmentName, findEnvironment } from "../../lib/publishing/environments.ts";
import { deleteVariable, VariableKey } from "../../lib/variables/variables.ts";

export const endpoint = defineEndpoint({
  operationId: "delete_environment_secret",
  summary: "Delete an environment's secret",
  params: z.object({ environment: EnvironmentName, key: VariableKey }),
  response: z.object({ deleted: z.boolean() }),
  async handle({ params }, ctx: ProjectContext) {
    const env =
      (await findEnvironment(ctx.db, ctx.project.id, params.environment)) ?? fail("not_found", `No environment ${params.environment} in this project.`);
    const user = ctx.principal.user;
    if (
      !(await deleteVariable(
        ctx.db,
        { projectId: ctx.project.id, pipelineId: null, environmentId: env.id },
        params.key,
        { id: user.id, email: user.email },
        ctx.clock.now(),
      ))
    )
      fail("not_found", `No secret ${params.key} in environment ${env.name}.`);
    return { deleted: true };
  },
});
