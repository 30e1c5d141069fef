// POST /v1/runners/{runner_id}/jobs/{job_id}/logs (runner token; docs/runners.md "Protocol"): appends log lines.
// Body {first_line, lines}: the job-local index of the first line and up to 1 MiB of lines.
// Idempotent: lines Roost already has are skipped (202 with next_line), so a retried request
// never duplicates; a request that starts past next_line stores nothing and answers
// 416 log_gap with next_line, and the runner resends from there, so nothing is lost.
// Every answer carries X-Roost-Job-Status (running | canceling).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { json } from "../../lib/http/io.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { LOG_REQUEST_LIMIT, LogAppendAnswer, LogAppendRequest } from "../../lib/runners/protocol-wire.ts";
import { jobStatusHeader, ownedRunningJob } from "../../lib/runners/protocol.ts";
import { appendLogLines } from "../../lib/logs/store.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_append_logs",
  summary: "Runner: append log lines (idempotent)",
  params: z.object({ job_id: IdParam }),
  body: LogAppendRequest,
  bodyLimitBytes: LOG_REQUEST_LIMIT,
  response: LogAppendAnswer,
  successStatus: 202,
  errors: ["job_not_assigned", "job_finished", "log_gap"],
  async handle({ params, body }, ctx: RunnerContext) {
    const job = await ownedRunningJob(ctx, params.job_id);
    // The build's status is read beside the append, not after it: on a remote database that is a round trip less to wait for.
    const [result, status] = await Promise.all([
      appendLogLines(ctx.db, job.id, job.build_id, body.first_line, body.lines, ctx.clock.now(), ctx.config.runners.maxBuildLogBytes),
      jobStatusHeader(ctx, job.build_id),
    ]);
    // Committed: the stored lines themselves go to the build's live streams at once (no re-read).
    if (result.kind === "ok" && result.entries.length > 0) await ctx.live.logs.publish(job.build_id, result.entries);
    if (result.kind === "gap") {
      fail("log_gap", `Lines from ${result.next_line} are missing; resend from line ${result.next_line}.`, {
        headers: { ...status, "x-roost-log-next-line": String(result.next_line) },
      });
    }
    ctx.metrics.counter("roost_log_bytes_ingested_total", "Bytes of build log lines stored.").inc(
      {},
      body.lines.slice(Math.max(0, body.lines.length - result.accepted)).reduce((n, l) => n + Buffer.byteLength(l.text) + 1, 0),
    );
    return json({ next_line: result.next_line, last_seq: result.last_seq, accepted: result.accepted }, 202, {
      ...status,
      "x-roost-log-next-line": String(result.next_line),
    });
  },
});
