// PUT /v1/runners/{runner_id}/jobs/{job_id}/steps/{step} (runner token): records one step's
// result in the build's step_results, replacing an earlier report of the same step.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { StepResult } from "../../lib/builds/wire.ts";
import { StepName, StepReport } from "../../lib/runners/protocol-wire.ts";
import { ownedRunningJob } from "../../lib/runners/protocol.ts";
import { recordStepResult } from "../../lib/builds/steps.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_report_step",
  summary: "Runner: report a step's result",
  params: z.object({ job_id: IdParam, step: StepName }),
  body: StepReport,
  response: z.object({ step_results: z.array(StepResult) }),
  errors: ["job_not_assigned", "job_finished"],
  async handle({ params, body }, ctx: RunnerContext) {
    const job = await ownedRunningJob(ctx, params.job_id);
    return { step_results: await recordStepResult(ctx.db, job.build_id, { name: params.step, ...body }) };
  },
});
