// GET /v1/projects/{project_id}/builds (project viewer): newest first, filterable, paged by cursor.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { ListBuildsQuery, ListBuildsResponse, buildListPage } from "../../lib/builds/listing.ts";
import { BuildListItem } from "../../lib/test-results/schema.ts";

export const endpoint = defineEndpoint({
  operationId: "list_project_builds",
  summary: "List a project's builds",
  params: z.object({ project_id: IdParam }),
  query: ListBuildsQuery,
  response: z.object({ builds: z.array(BuildListItem), ...ListBuildsResponse }),
  async handle({ params, query }, ctx) {
    return buildListPage(ctx.db, { projectId: params.project_id }, query);
  },
});
