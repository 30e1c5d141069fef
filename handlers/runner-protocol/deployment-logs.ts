// POST /v1/runners/{runner_id}/deployments/{deployment_id}/logs (runner token): a publish's log
// lines, appended to its build's log under the publish's step, exactly as a job's
// (handlers/runner-protocol/logs.ts: idempotent, 416 log_gap with next_line).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { json } from "../../lib/http/io.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { LOG_REQUEST_LIMIT, LogAppendAnswer, LogAppendRequest } from "../../lib/runners/protocol-wire.ts";
import { appendLogLines } from "../../lib/logs/store.ts";
import { ownedRunningDeployment } from "../../lib/publishing/protocol.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_append_deployment_logs",
  summary: "Runner: append a publish's log lines (idempotent)",
  params: z.object({ deployment_id: IdParam }),
  body: LogAppendRequest,
  bodyLimitBytes: LOG_REQUEST_LIMIT,
  response: LogAppendAnswer,
  successStatus: 202,
  errors: ["job_not_assigned", "job_finished", "log_gap"],
  async handle({ params, body }, ctx: RunnerContext) {
    const d = await ownedRunningDeployment(ctx, params.deployment_id);
    const result = await appendLogLines(
      ctx.db,
      d.id,
      d.build_id,
      body.first_line,
      body.lines,
      ctx.clock.now(),
      ctx.config.runners.maxBuildLogBytes,
      "deployments",
    );
    if (result.kind === "ok" && result.entries.length > 0) await ctx.live.logs.publish(d.build_id, result.entries);
    if (result.kind === "gap")
      fail("log_gap", `Lines from ${result.next_line} are missing; resend from line ${result.next_line}.`, {
        headers: { "x-roost-job-status": "running", "x-roost-log-next-line": String(result.next_line) },
      });
    return json({ next_line: result.next_line, last_seq: result.last_seq, accepted: result.accepted }, 202, {
      "x-roost-job-status": "running",
      "x-roost-log-next-line": String(result.next_line),
    });
  },
});
