// GET /v1/projects/{project_id}/environments/{environment}/secrets (project maintainer): the
// environment's secrets and variables, by name (secret values are never returned).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { EnvironmentName, findEnvironment } from "../../lib/publishing/environments.ts";
import { listVariables, toPublicVariable, VariableResource } from "../../lib/variables/variables.ts";

export const endpoint = defineEndpoint({
  operationId: "list_environment_secrets",
  summary: "List an environment's secrets (values are never returned)",
  params: z.object({ environment: EnvironmentName }),
  response: z.object({ secrets: z.array(VariableResource) }),
  async handle({ params }, ctx: ProjectContext) {
    const env =
      (await findEnvironment(ctx.db, ctx.project.id, params.environment)) ?? fail("not_found", `No environment ${params.environment} in this project.`);
    return { secrets: (await listVariables(ctx.db, ctx.project.id, null, env.id)).map(toPublicVariable) };
  },
});
