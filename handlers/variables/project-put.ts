// PUT /v1/projects/{project_id}/variables/{key} (project maintainer): creates or replaces a
// project variable; every build of the project's pipelines receives it (docs/secrets.md).
import { putVariableEndpoint } from "../../lib/variables/endpoints.ts";

export const endpoint = putVariableEndpoint({ operationId: "put_project_variable", summary: "Create or replace a project variable or secret" });
