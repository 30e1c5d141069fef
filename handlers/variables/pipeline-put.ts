// PUT /v1/pipelines/{pipeline_id}/variables/{key} (project maintainer): creates or replaces a
// pipeline variable; it replaces a project variable of the same key in this pipeline's builds.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { MAX_FILE_BYTES, PutVariableBody, putVariable, toPublicVariable, VariableKey, VariableResource } from "../../lib/variables/variables.ts";

export const endpoint = defineEndpoint({
  operationId: "put_pipeline_variable",
  summary: "Create or replace a pipeline variable or secret",
  params: z.object({ key: VariableKey }),
  body: PutVariableBody,
  bodyLimitBytes: 2 * MAX_FILE_BYTES,
  response: z.object({ variable: VariableResource, created: z.boolean() }),
  async handle({ params, body }, ctx: ProjectContext<"pipeline_id">) {
    const user = ctx.principal.user;
    const { variable, created } = await putVariable(
      ctx.db,
      ctx.secrets,
      { projectId: ctx.pipeline.project_id, pipelineId: ctx.pipeline.id },
      params.key,
      body,
      { id: user.id, email: user.email },
      ctx.clock.now(),
    );
    return { variable: toPublicVariable(variable), created };
  },
});
