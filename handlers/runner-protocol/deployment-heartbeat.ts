// POST /v1/runners/{runner_id}/deployments/{deployment_id}/heartbeat (runner token): renews the
// lease of a publish the runner is running; answers its status (anything but running: stop).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { findDeployment, renewDeploymentLease } from "../../lib/publishing/deployments.ts";
import { PublishHeartbeatAnswer } from "../../lib/publishing/wire.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_deployment_heartbeat",
  summary: "Runner: heartbeat of a publish",
  params: z.object({ deployment_id: IdParam }),
  response: PublishHeartbeatAnswer,
  errors: ["job_not_assigned"],
  async handle({ params }, ctx: RunnerContext) {
    const d = await findDeployment(ctx.db, params.deployment_id);
    if (!d || d.runner_id !== ctx.runner.id) fail("job_not_assigned", "This deployment is not assigned to this runner.");
    await renewDeploymentLease(ctx.db, d.id, ctx.runner.id, ctx.clock.now(), ctx.config.runners.leaseSeconds);
    return { status: d.status, lease_seconds: ctx.config.runners.leaseSeconds };
  },
});
