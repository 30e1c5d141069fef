// POST /v1/runners/{runner_id}/heartbeat (runner token): renews the lease of the runner's jobs
// and answers which of them to stop (their build was canceled): cancel reaches a runner within
// one heartbeat.
import { defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { heartbeat } from "../../lib/runners/jobs.ts";
import { HeartbeatAnswer, HeartbeatRequest } from "../../lib/runners/protocol-wire.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_heartbeat",
  summary: "Runner: heartbeat",
  body: HeartbeatRequest,
  response: HeartbeatAnswer,
  async handle({ body }, ctx: RunnerContext) {
    const result = await heartbeat(ctx.db, ctx.runner.id, body.job_ids, ctx.clock.now(), ctx.config.runners.leaseSeconds);
    return { ...result, lease_seconds: ctx.config.runners.leaseSeconds };
  },
});
