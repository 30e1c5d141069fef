// POST /v1/runners/{runner_id}/jobs/{job_id}/finish (runner token): the job is done. Refused
// with 409 log_incomplete while the runner says it produced more lines than Roost has (it sends
// them, then finishes again), so a build never ends with a partial log. Idempotent: finishing
// a finished job again answers the build as it is.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { BuildResource } from "../../lib/builds/wire.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { findJobWithBuild, takeStartedHere } from "../../lib/runners/jobs.ts";
import { toPublicBuild } from "../../lib/builds/store.ts";
import { finishJob, finishStartedHere } from "../../lib/runners/job-lifecycle.ts";
import { FinishRequest, plainFinish } from "../../lib/runners/protocol-wire.ts";
import { confirmRunner } from "../../lib/auth/authenticate.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_finish_job",
  summary: "Runner: finish a job",
  params: z.object({ job_id: IdParam }),
  body: FinishRequest,
  plainBody: plainFinish,
  runnerInWrite: true,
  response: z.object({ build: BuildResource }),
  errors: ["job_not_assigned", "job_finished", "log_incomplete"],
  async handle({ params, body }, ctx: RunnerContext) {
    // A job this process claimed: planned from its build as the claim started it, nothing read
    // first; when the job or the build is no longer as claimed, nothing was written, and below reads them.
    // The runner as this daemon remembers it (lib/auth/authenticate.ts runnerStands) is held in that guard too.
    const claimed = takeStartedHere(ctx.db, params.job_id);
    const done = claimed && (await finishStartedHere(ctx, params.job_id, ctx.runner.id, body, claimed, ctx.runnerStands));
    if (done) return { build: toPublicBuild(done) };
    // Before anything is read or written for it, a runner not read yet is (refused if its token no longer works).
    if (ctx.runnerStands) await confirmRunner(ctx, ctx.runner.id);
    // The job and its build side by side (one request to a remote database): the finish is planned from the build as read.
    const found = await findJobWithBuild(ctx.db, params.job_id);
    if (!found || found.job.runner_id !== ctx.runner.id) fail("job_not_assigned");
    const { job } = found;
    let build = found.build;
    if (job.status === "lost") fail("job_finished", "This job was lost (its lease expired); its build has already failed.");
    if (job.status === "running") {
      if (body.line_count > job.next_line) {
        fail("log_incomplete", `Roost has ${job.next_line} of ${body.line_count} lines; send the rest, then finish.`, {
          headers: { "x-roost-log-next-line": String(job.next_line) },
        });
      }
      // Job and build in one write; a build canceled meanwhile stays canceled and is answered as it is.
      build = (await finishJob(ctx, job, body, build)).build;
    }
    return { build: toPublicBuild(build!) };
  },
});
