// PUT /v1/projects/{project_id}/variables/{key} (project maintainer): creates or replaces a
// project variable; every build of the project's pipelines receives it (docs/secrets.md).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { MAX_FILE_BYTES, PutVariableBody, putVariable, toPublicVariable, VariableKey, VariableResource } from "../../lib/variables/variables.ts";

export const endpoint = defineEndpoint({
  operationId: "put_project_variable",
  summary: "Create or replace a project variable or secret",
  params: z.object({ key: VariableKey }),
  body: PutVariableBody,
  bodyLimitBytes: 2 * MAX_FILE_BYTES,
  response: z.object({ variable: VariableResource, created: z.boolean() }),
  async handle({ params, body }, ctx: ProjectContext) {
    const user = ctx.principal.user;
    const { variable, created } = await putVariable(
      ctx.db,
      ctx.secrets,
      { projectId: ctx.project.id, pipelineId: null },
      params.key,
      body,
      { id: user.id, email: user.email },
      ctx.clock.now(),
    );
    return { variable: toPublicVariable(variable), created };
  },
});
