// GET /v1/projects/{project_id}/variable-changes (project maintainer): who created, replaced or
// deleted which variable of the project or its pipelines, and when; never a value.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { listVariableChanges, VariableChangeResource } from "../../lib/variables/variables.ts";

export const endpoint = defineEndpoint({
  operationId: "list_variable_changes",
  summary: "List the changes to a project's variables and secrets, newest first",
  query: z.object({
    pipeline_id: IdParam.optional().describe("only this pipeline's variables"),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    offset: z.coerce.number().int().min(0).default(0),
  }),
  response: z.object({ changes: z.array(VariableChangeResource) }),
  async handle({ query }, ctx: ProjectContext) {
    return { changes: await listVariableChanges(ctx.db, ctx.project.id, { pipelineId: query.pipeline_id, limit: query.limit, offset: query.offset }) };
  },
});
