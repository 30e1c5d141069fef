// DELETE /v1/pipelines/{pipeline_id} (project maintainer): removes the pipeline and its builds.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { deletePipeline } from "../../lib/pipelines/store.ts";

export const endpoint = defineEndpoint({
  operationId: "delete_pipeline",
  summary: "Delete a pipeline",
  response: z.object({ deleted: z.boolean() }),
  async handle(_input, ctx: ProjectContext<"pipeline_id">) {
    await deletePipeline(ctx.db, ctx.pipeline.id);
    return { deleted: true };
  },
});
