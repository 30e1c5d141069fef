// POST /v1/runners/{runner_id}/deployments/{deployment_id}/finish (runner token): the publish is
// done, with the store's answer or why it failed. Refused with 409 log_incomplete while Roost has
// fewer of its lines than the runner says it produced. The outcome and its line in the build's
// log are one transaction. Idempotent: finishing a finished deployment answers it as it is.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { endDeployment } from "../../lib/publishing/end.ts";
import { DeploymentResource, deploymentResource, findDeployment, finishDeployment } from "../../lib/publishing/deployments.ts";
import { PublishFinishRequest } from "../../lib/publishing/wire.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_finish_deployment",
  summary: "Runner: finish a publish",
  params: z.object({ deployment_id: IdParam }),
  body: PublishFinishRequest,
  response: z.object({ deployment: DeploymentResource }),
  errors: ["job_not_assigned", "log_incomplete"],
  async handle({ params, body }, ctx: RunnerContext) {
    const d = await findDeployment(ctx.db, params.deployment_id);
    if (!d || d.runner_id !== ctx.runner.id) fail("job_not_assigned", "This deployment is not assigned to this runner.");
    if (d.status === "running") {
      if (body.line_count > d.next_line)
        fail("log_incomplete", `Roost has ${d.next_line} of ${body.line_count} lines; send the rest, then finish.`, {
          headers: { "x-roost-log-next-line": String(d.next_line) },
        });
      const now = ctx.clock.now();
      const outcome = {
        status: body.status,
        store_answer: body.store_answer ?? null,
        failure_reason: body.status === "failed" ? (body.failure_reason ?? "the publish failed") : null,
      };
      await endDeployment(ctx, now, (tx) => finishDeployment(tx, d.id, ctx.runner.id, outcome, now));
    }
    return { deployment: (await deploymentResource(ctx.db, d.id))! };
  },
});
