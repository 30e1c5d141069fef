// GET /v1/pipelines/{pipeline_id}/builds (project viewer): newest first, filterable, paged by cursor.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { ListBuildsQuery, ListBuildsResponse, buildListPage } from "../../lib/builds/listing.ts";
import { BuildListItem } from "../../lib/test-results/schema.ts";

export const endpoint = defineEndpoint({
  operationId: "list_pipeline_builds",
  summary: "List a pipeline's builds",
  query: ListBuildsQuery,
  response: z.object({ builds: z.array(BuildListItem), ...ListBuildsResponse }),
  async handle({ query }, ctx: ProjectContext<"pipeline_id">) {
    return buildListPage(ctx.db, { projectId: ctx.pipeline.project_id, pipelineId: ctx.pipeline.id }, query);
  },
});
