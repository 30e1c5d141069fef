// GET /v1/deployments/{deployment_id} (project viewer): one deployment, its decision and the store's answer.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { DeploymentResource, deploymentResource } from "../../lib/publishing/deployments.ts";

export const endpoint = defineEndpoint({
  operationId: "get_deployment",
  summary: "Get a deployment",
  response: z.object({ deployment: DeploymentResource }),
  async handle(_input, ctx: ProjectContext<"deployment_id">) {
    return { deployment: (await deploymentResource(ctx.db, ctx.deployment.id))! };
  },
});
