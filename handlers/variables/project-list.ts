// GET /v1/projects/{project_id}/variables (project maintainer): the project's own variables.
// Secrets are listed by name only (value null).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { listVariables, toPublicVariable, VariableResource } from "../../lib/variables/variables.ts";

export const endpoint = defineEndpoint({
  operationId: "list_project_variables",
  summary: "List a project's variables and secrets (secret values are never returned)",
  response: z.object({ variables: z.array(VariableResource) }),
  async handle(_input, ctx: ProjectContext) {
    return { variables: (await listVariables(ctx.db, ctx.project.id, null)).map(toPublicVariable) };
  },
});
