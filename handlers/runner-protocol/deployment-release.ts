// POST /v1/runners/{runner_id}/deployments/{deployment_id}/release (runner token): a stopping
// runner hands back a publish it claimed but has not started (no log line yet); it is approved
// again, for any runner. 409 job_started once it has begun.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { releaseDeployment } from "../../lib/publishing/claim.ts";
import { ownedRunningDeployment } from "../../lib/publishing/protocol.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_release_deployment",
  summary: "Runner: hand back a publish it has not started",
  params: z.object({ deployment_id: IdParam }),
  response: z.object({ released: z.literal(true) }),
  errors: ["job_not_assigned", "job_finished", "job_started"],
  async handle({ params }, ctx: RunnerContext) {
    const d = await ownedRunningDeployment(ctx, params.deployment_id);
    if (!(await releaseDeployment(ctx.db, d.id, ctx.runner.id, ctx.clock.now())))
      fail("job_started", "This publish has started (it sent a log line); finish it instead of releasing it.");
    ctx.events.publish({ type: "deployment.changed", deployment_id: d.id, build_id: d.build_id, project_id: d.project_id, status: "approved" });
    return { released: true as const };
  },
});
