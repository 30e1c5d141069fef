// DELETE /v1/projects/{project_id}/variables/{key} (project maintainer).
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { IdParam } from "../../lib/schemas/ci.ts";
import { scopedProject } from "../../lib/auth/project-access.ts";
import { deleteVariable, VariableKey } from "../../lib/variables.ts";

export const endpoint = defineEndpoint({
  operationId: "delete_project_variable",
  summary: "Delete a project variable or secret",
  tag: "variables",
  params: z.object({ project_id: IdParam, key: VariableKey }),
  response: z.object({ deleted: z.boolean() }),
  errors: [],
  async handle({ params }, ctx) {
    const user = ctx.principal?.user;
    const deleted = await deleteVariable(
      ctx.db,
      { projectId: scopedProject(ctx).id, pipelineId: null },
      params.key,
      { id: user?.id ?? null, email: user?.email ?? "" },
      ctx.clock.now(),
    );
    if (!deleted) fail("not_found", `No project variable ${params.key}.`);
    return { deleted: true };
  },
});
