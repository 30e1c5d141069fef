// PUT /v1/projects/{project_id}/environments/{environment}/secrets/{key} (project maintainer):
// creates or replaces one of the environment's secrets (a service account's JSON key, an App
// Store Connect .p8). Sealed for this environment's scope alone, recorded in variable-changes,
// given only to a publish to this environment, never to a build (docs/publishing.md).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { EnvironmentName, findEnvironment } from "../../lib/publishing/environments.ts";
import { MAX_FILE_BYTES, PutVariableBody, putVariable, toPublicVariable, VariableKey, VariableResource } from "../../lib/variables/variables.ts";

export const endpoint = defineEndpoint({
  operationId: "put_environment_secret",
  summary: "Create or replace an environment's secret",
  params: z.object({ environment: EnvironmentName, key: VariableKey }),
  body: PutVariableBody,
  bodyLimitBytes: 2 * MAX_FILE_BYTES,
  response: z.object({ secret: VariableResource, created: z.boolean() }),
  async handle({ params, body }, ctx: ProjectContext) {
    const env =
      (await findEnvironment(ctx.db, ctx.project.id, params.environment)) ?? fail("not_found", `No environment ${params.environment} in this project.`);
    const user = ctx.principal.user;
    const { variable, created } = await putVariable(
      ctx.db,
      ctx.secrets,
      { projectId: ctx.project.id, pipelineId: null, environmentId: env.id },
      params.key,
      body,
      { id: user.id, email: user.email },
      ctx.clock.now(),
    );
    return { secret: toPublicVariable(variable), created };
  },
});
