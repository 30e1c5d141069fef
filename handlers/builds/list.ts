// GET /v1/projects/{project_id}/builds (project viewer): newest first, filterable.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { BuildResource, IdParam } from "../../lib/schemas/ci.ts";
import { listBuilds, toPublicBuild } from "../../lib/db/builds.ts";
import { ListBuildsQuery } from "../../lib/builds/listing.ts";

export const endpoint = defineEndpoint({
  operationId: "list_project_builds",
  summary: "List a project's builds",
  tag: "builds",
  params: z.object({ project_id: IdParam }),
  query: ListBuildsQuery,
  response: z.object({ builds: z.array(BuildResource), total: z.number().int() }),
  errors: [],
  async handle({ params, query }, ctx) {
    const page = await listBuilds(ctx.db, { projectId: params.project_id, status: query.status, branch: query.branch, triggerType: query.trigger_type, limit: query.limit, offset: query.offset });
    return { builds: page.builds.map(toPublicBuild), total: page.total };
  },
});
