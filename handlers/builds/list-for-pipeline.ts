// GET /v1/pipelines/{pipeline_id}/builds (project viewer): newest first, filterable.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { BuildResource, IdParam } from "../../lib/schemas/ci.ts";
import { scopedPipeline } from "../../lib/auth/project-access.ts";
import { listBuilds, toPublicBuild } from "../../lib/db/builds.ts";
import { findPipeline } from "../../lib/db/pipelines.ts";
import { ListBuildsQuery } from "../../lib/builds/listing.ts";

export const endpoint = defineEndpoint({
  operationId: "list_pipeline_builds",
  summary: "List a pipeline's builds",
  tag: "builds",
  params: z.object({ pipeline_id: IdParam }),
  query: ListBuildsQuery,
  response: z.object({ builds: z.array(BuildResource), total: z.number().int() }),
  errors: [],
  async handle({ params, query }, ctx) {
    const pipeline = scopedPipeline(ctx);
    const page = await listBuilds(ctx.db, { projectId: pipeline.project_id, pipelineId: pipeline.id, status: query.status, branch: query.branch, triggerType: query.trigger_type, limit: query.limit, offset: query.offset });
    return { builds: page.builds.map(toPublicBuild), total: page.total };
  },
});
