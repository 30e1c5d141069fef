// DELETE /v1/pipelines/{pipeline_id}/variables/{key} (project maintainer).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { deleteVariable, VariableKey } from "../../lib/variables/variables.ts";

export const endpoint = defineEndpoint({
  operationId: "delete_pipeline_variable",
  summary: "Delete a pipeline variable or secret",
  params: z.object({ key: VariableKey }),
  response: z.object({ deleted: z.boolean() }),
  async handle({ params }, ctx: ProjectContext<"pipeline_id">) {
    const user = ctx.principal.user;
    const deleted = await deleteVariable(
      ctx.db,
      { projectId: ctx.pipeline.project_id, pipelineId: ctx.pipeline.id },
      params.key,
      { id: user.id, email: user.email },
      ctx.clock.now(),
    );
    if (!deleted) fail("not_found", `No pipeline variable ${params.key}.`);
    return { deleted: true };
  },
});
