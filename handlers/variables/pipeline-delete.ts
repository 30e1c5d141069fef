// DELETE /v1/pipelines/{pipeline_id}/variables/{key} (project maintainer).
import { deleteVariableEndpoint } from "../../lib/variables/endpoints.ts";

export const endpoint = deleteVariableEndpoint({ operationId: "delete_pipeline_variable", summary: "Delete a pipeline variable or secret" });
