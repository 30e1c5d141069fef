// GET /v1/pipelines/{pipeline_id} (project viewer).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { PipelineResource } from "../../lib/pipelines/wire.ts";
import { toPublicPipeline } from "../../lib/pipelines/store.ts";

export const endpoint = defineEndpoint({
  operationId: "get_pipeline",
  summary: "Read a pipeline",
  response: z.object({ pipeline: PipelineResource }),
  async handle(_input, ctx: ProjectContext<"pipeline_id">) {
    return { pipeline: toPublicPipeline(ctx.pipeline) };
  },
});
