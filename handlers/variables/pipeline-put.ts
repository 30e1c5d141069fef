// PUT /v1/pipelines/{pipeline_id}/variables/{key} (project maintainer): creates or replaces a
// pipeline variable; it replaces a project variable of the same key in this pipeline's builds.
import { putVariableEndpoint } from "../../lib/variables/endpoints.ts";

export const endpoint = putVariableEndpoint({ operationId: "put_pipeline_variable", summary: "Create or replace a pipeline variable or secret" });
