// GET /v1/pipelines/{pipeline_id}/variables (project maintainer): the pipeline's own variables
// (its project's are listed under the project). Secrets are listed by name only (value null).
import { listVariablesEndpoint } from "../../lib/variables/endpoints.ts";

export const endpoint = listVariablesEndpoint({
  operationId: "list_pipeline_variables",
  summary: "List a pipeline's variables and secrets (secret values are never returned)",
});
