// GET /v1/pipelines/{pipeline_id}/builds (project viewer): newest first, filterable, paged by cursor.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import type { ProjectContext } from "../../lib/context.ts";
import { IdParam } from "../../lib/schemas/ci.ts";
import { listBuilds, toPublicBuild } from "../../lib/db/builds.ts";
import { ListBuildsQuery, ListBuildsResponse, encodeBuildCursor } from "../../lib/builds/listing.ts";
import { BuildListItem } from "../../lib/test-results/schema.ts";
import { withTestSummaries } from "../../lib/test-results/queries.ts";

export const endpoint = defineEndpoint({
  operationId: "list_pipeline_builds",
  summary: "List a pipeline's builds",
  tag: "builds",
  params: z.object({ pipeline_id: IdParam }),
  query: ListBuildsQuery,
  response: z.object({ builds: z.array(BuildListItem), ...ListBuildsResponse }),
  errors: [],
  async handle({ query }, ctx: ProjectContext<"pipeline_id">) {
    const pipeline = ctx.pipeline;
    const page = await listBuilds(ctx.db, {
      projectId: pipeline.project_id,
      pipelineId: pipeline.id,
      status: query.status,
      branch: query.branch,
      triggerType: query.trigger_type,
      limit: query.limit,
      before: query.cursor,
      withTotal: query.include === "total",
    });
    return {
      builds: await withTestSummaries(ctx.db, page.builds.map(toPublicBuild)),
      next_cursor: page.nextBefore === null ? null : encodeBuildCursor(page.nextBefore),
      ...(page.total === undefined ? {} : { total: page.total }),
    };
  },
});
