// GET /v1/projects/{project_id}/builds (project viewer): newest first, filterable, paged by cursor.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { IdParam } from "../../lib/schemas/ci.ts";
import { listBuilds, toPublicBuild } from "../../lib/db/builds.ts";
import { ListBuildsQuery, ListBuildsResponse, encodeBuildCursor } from "../../lib/builds/listing.ts";
import { BuildListItem } from "../../lib/test-results/schema.ts";
import { withTestSummaries } from "../../lib/test-results/queries.ts";

export const endpoint = defineEndpoint({
  operationId: "list_project_builds",
  summary: "List a project's builds",
  tag: "builds",
  params: z.object({ project_id: IdParam }),
  query: ListBuildsQuery,
  response: z.object({ builds: z.array(BuildListItem), ...ListBuildsResponse }),
  errors: [],
  async handle({ params, query }, ctx) {
    const page = await listBuilds(ctx.db, {
      projectId: params.project_id,
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
