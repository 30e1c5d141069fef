// POST /v1/deployments/{deployment_id}/approve (project maintainer; an environment that lists
// approvers takes only them): a waiting deployment is approved and queued for a runner.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { DeploymentResource } from "../../lib/publishing/deployments.ts";
import { decide } from "../../lib/publishing/decide.ts";

export const endpoint = defineEndpoint({
  operationId: "approve_deployment",
  summary: "Approve a deployment waiting for approval",
  authNote: "when the environment lists approvers, only they (each a project maintainer)",
  response: z.object({ deployment: DeploymentResource }),
  errors: ["deployment_not_waiting"],
  async handle(_input, ctx: ProjectContext<"deployment_id">) {
    return { deployment: await decide(ctx, ctx.deployment, "approved", ctx.principal.user) };
  },
});
