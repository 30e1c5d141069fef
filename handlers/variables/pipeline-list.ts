// GET /v1/pipelines/{pipeline_id}/variables (project maintainer): the pipeline's own variables
// (its project's are listed under the project). Secrets are listed by name only (value null).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { listVariables, toPublicVariable, VariableResource } from "../../lib/variables/variables.ts";

export const endpoint = defineEndpoint({
  operationId: "list_pipeline_variables",
  summary: "List a pipeline's variables and secrets (secret values are never returned)",
  response: z.object({ variables: z.array(VariableResource) }),
  async handle(_input, ctx: ProjectContext<"pipeline_id">) {
    return { variables: (await listVariables(ctx.db, ctx.pipeline.project_id, ctx.pipeline.id)).map(toPublicVariable) };
  },
});
