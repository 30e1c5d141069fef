// GET /v1/pipelines/{pipeline_id}/trends (project viewer): the pipeline's last builds with what
// its charts draw (docs/web-app.md "Pipeline charts"): queue time and duration, test counts,
// coverage and the size of each artifact, newest first.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { BranchName } from "../../lib/pipelines/wire.ts";
import { TrendPoint } from "../../lib/test-results/schema.ts";
import { pipelineTrends } from "../../lib/test-results/queries.ts";

export const endpoint = defineEndpoint({
  operationId: "get_pipeline_trends",
  summary: "A pipeline's last builds: duration, tests, coverage, artifact sizes",
  query: z.object({
    limit: z.coerce.number().int().min(1).max(200).default(50),
    branch: BranchName.optional().describe("only this branch's builds"),
  }),
  response: z.object({ builds: z.array(TrendPoint) }),
  async handle({ query }, ctx: ProjectContext<"pipeline_id">) {
    return { builds: await pipelineTrends(ctx.db, ctx.pipeline.id, query) };
  },
});
