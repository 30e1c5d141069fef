// POST /v1/runners/{runner_id}/jobs/{job_id}/logs (runner token; docs/runners.md "Protocol"): a
// job's log lines (lib/logs/append-endpoint.ts: idempotent, 416 log_gap with next_line). Its
// answers say whether the build is being canceled (X-Roost-Job-Status).
import { z } from "zod";
import { IdParam } from "../../lib/schemas/shared.ts";
import { logAppendEndpoint } from "../../lib/logs/append-endpoint.ts";
import { findJobForLogAppend, jobHeldForAppend } from "../../lib/runners/jobs.ts";
import { logPositionFrom } from "../../lib/logs/store.ts";
import { ownedRunningJobWithStatus } from "../../lib/runners/protocol.ts";

export const endpoint = logAppendEndpoint(
  { operationId: "runner_append_logs", summary: "Runner: append log lines (idempotent)", params: z.object({ job_id: IdParam }) },
  {
    from: "jobs",
    idParam: "job_id",
    // The job, its build's status and its log position in one statement (shared by the appends that arrive together on libSQL).
    read(db, id) {
      const found = findJobForLogAppend(db, id);
      return { found, position: found.then((f) => (f ? logPositionFrom(f.row) : null)) };
    },
    // What authentication and the judge below read, as a condition of the append's write.
    held: jobHeldForAppend,
  },
  async (ctx, id, found) => {
    const { job, status } = await ownedRunningJobWithStatus(ctx, id, found);
    return { id: job.id, build_id: job.build_id, status: async () => status };
  },
);
