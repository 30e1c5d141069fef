// DELETE /v1/pipelines/{pipeline_id} (project maintainer): removes the pipeline and its builds.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { IdParam } from "../../lib/schemas/ci.ts";
import { requireProjectRole } from "../../lib/auth/project-access.ts";
import { deletePipeline, findPipeline } from "../../lib/db/pipelines.ts";

export const endpoint = defineEndpoint({
  operationId: "delete_pipeline",
  summary: "Delete a pipeline",
  tag: "pipelines",
  params: z.object({ pipeline_id: IdParam }),
  response: z.object({ deleted: z.boolean() }),
  errors: ["not_found", "forbidden", "invalid_session", "invalid_token"],
  async handle({ params }, ctx) {
    const pipeline = await findPipeline(ctx.db, params.pipeline_id);
    if (!pipeline) fail("not_found", "No pipeline with that id.");
    await requireProjectRole(ctx, pipeline.project_id, "maintainer");
    await deletePipeline(ctx.db, pipeline.id);
    return { deleted: true };
  },
});
