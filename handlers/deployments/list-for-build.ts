// GET /v1/builds/{build_id}/deployments (project viewer): a build's deployments, newest first:
// what the build page shows beside its steps (waiting for approval, running, the store's answer).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { DeploymentResource, listDeployments } from "../../lib/publishing/deployments.ts";

export const endpoint = defineEndpoint({
  operationId: "list_build_deployments",
  summary: "List a build's deployments",
  response: z.object({ deployments: z.array(DeploymentResource) }),
  async handle(_input, ctx: ProjectContext<"build_id">) {
    return { deployments: await listDeployments(ctx.db, { projectId: ctx.build.project_id, buildId: ctx.build.id, limit: 200, offset: 0 }) };
  },
});
