// DELETE /v1/projects/{project_id}/variables/{key} (project maintainer).
import { deleteVariableEndpoint } from "../../lib/variables/endpoints.ts";

export const endpoint = deleteVariableEndpoint({ operationId: "delete_project_variable", summary: "Delete a project variable or secret" });
