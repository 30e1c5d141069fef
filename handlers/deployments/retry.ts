// POST /v1/deployments/{deployment_id}/retry (project developer): a failed deployment is asked
// for again, as a new deployment of the same build and publisher (retry_of names the failed
// one). The environment's approval applies again. The publisher itself does not send twice
// what the store already has (docs/publishing.md "Retries").
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { findBuild } from "../../lib/builds/store.ts";
import { DeploymentResource } from "../../lib/publishing/deployments.ts";
import { requestDeployment } from "../../lib/publishing/request.ts";

export const endpoint = defineEndpoint({
  operationId: "retry_deployment",
  summary: "Retry a failed deployment",
  ...created({ deployment: DeploymentResource }),
  errors: ["deployment_not_retryable", "build_not_publishable"],
  async handle(_input, ctx: ProjectContext<"deployment_id">) {
    const failed = ctx.deployment;
    if (failed.status !== "failed") fail("deployment_not_retryable", `This deployment is ${failed.status}; only a failed deployment can be retried.`);
    const build = (await findBuild(ctx.db, failed.build_id))!;
    const user = ctx.principal.user;
    return { deployment: await requestDeployment(ctx, build, failed.publisher, "retry", failed.id, { id: user.id, email: user.email }) };
  },
});
