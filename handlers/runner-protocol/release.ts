// POST /v1/runners/{runner_id}/jobs/{job_id}/release (runner token): a stopping runner hands back
// a job it claimed but has not started (no step reported, no log line sent). The job ends and its
// build is queued again, first in line, for any runner. A job that has started is 409 job_started:
// the runner finishes it instead (docs/runners.md "Stopping a runner").
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { findBuild } from "../../lib/builds/store.ts";
import { ownedRunningJob } from "../../lib/runners/protocol.ts";
import { releaseJob } from "../../lib/runners/job-lifecycle.ts";
import { ReleaseAnswer } from "../../lib/runners/protocol-wire.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_release_job",
  summary: "Runner: hand back a job it has not started",
  params: z.object({ job_id: IdParam }),
  response: ReleaseAnswer,
  errors: ["job_not_assigned", "job_finished", "job_started"],
  async handle({ params }, ctx: RunnerContext) {
    const job = await ownedRunningJob(ctx, params.job_id);
    const build = await findBuild(ctx.db, job.build_id);
    if (job.next_line > 0 || (build && build.step_results.length > 0)) fail("job_started");
    if (!(await releaseJob(ctx, job))) fail("job_finished", "This job's build is no longer running; stop working on it.");
    return { released: true as const, build_status: "queued" as const };
  },
});
