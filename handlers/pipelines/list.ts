// GET /v1/projects/{project_id}/pipelines (project viewer).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { PipelineResource } from "../../lib/pipelines/wire.ts";
import { listPipelines, toPublicPipeline } from "../../lib/pipelines/store.ts";

export const endpoint = defineEndpoint({
  operationId: "list_pipelines",
  summary: "List a project's pipelines",
  params: z.object({ project_id: IdParam }),
  response: z.object({ pipelines: z.array(PipelineResource) }),
  async handle({ params }, ctx) {
    return { pipelines: (await listPipelines(ctx.db, params.project_id)).map(toPublicPipeline) };
  },
});
