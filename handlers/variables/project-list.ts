// GET /v1/projects/{project_id}/variables (project maintainer): the project's own variables.
// Secrets are listed by name only (value null).
import { listVariablesEndpoint } from "../../lib/variables/endpoints.ts";

export const endpoint = listVariablesEndpoint({
  operationId: "list_project_variables",
  summary: "List a project's variables and secrets (secret values are never returned)",
});
