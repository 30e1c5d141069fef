// GET /v1/projects/{project_id}/deployments (project viewer): the project's deployments, newest
// first, optionally of one environment, status or build (docs/publishing.md "Deployments").
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { DEPLOYMENT_STATUSES, DeploymentResource, listDeployments } from "../../lib/publishing/deployments.ts";
import { EnvironmentName } from "../../lib/publishing/environments.ts";

export const endpoint = defineEndpoint({
  operationId: "list_deployments",
  summary: "List a project's deployments, newest first",
  query: z.object({
    environment: EnvironmentName.optional(),
    status: z.enum(DEPLOYMENT_STATUSES).optional(),
    build_id: IdParam.optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    offset: z.coerce.number().int().min(0).default(0),
  }),
  response: z.object({ deployments: z.array(DeploymentResource) }),
  async handle({ query }, ctx: ProjectContext) {
    return {
      deployments: await listDeployments(ctx.db, {
        projectId: ctx.project.id,
        environment: query.environment,
        status: query.status,
        buildId: query.build_id,
        limit: query.limit,
        offset: query.offset,
      }),
    };
  },
});
