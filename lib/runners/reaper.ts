// What happens when runners go quiet or none can take a build (docs/runners.md):
// - a job whose lease expired (no heartbeat or log for lease_seconds) is lost: its build fails
//   at once with exit code -1 and a reason saying which runner vanished, the line is written to
//   the log, and an operator incident is raised for the runner. Nothing is silently re-run.
// - a build queued longer than UNROUTABLE_AFTER_SECONDS that no live runner may take gets a
//   runner_policy_block_reason and an operator incident for its pipeline; it stays queued and
//   starts as soon as a suitable runner connects.
import type { AppContext } from "../context.ts";
import { all } from "../db/client.ts";
import { expiredJobs, markJob } from "../db/jobs.ts";
import { findRunner, liveRunners } from "../db/runners.ts";
import { transitionBuild } from "../builds/transition.ts";
import { raiseIncident, resolveIncident } from "../incidents.ts";
import { appendSystemLine } from "../db/build-logs.ts";
import { notifyHub } from "../log-hub.ts";
import { toBuild } from "../db/builds.ts";
import { whyNobodyCanTake } from "./routing.ts";

export const UNROUTABLE_AFTER_SECONDS = 30;

export async function reapLostJobs(ctx: AppContext): Promise<number> {
  const now = ctx.clock.now();
  let lost = 0;
  for (const job of await expiredJobs(ctx.db, now)) {
    if (!(await markJob(ctx.db, job.id, "lost", now))) continue; // another process got there first
    lost++;
    const runner = await findRunner(ctx.db, job.runner_id);
    const name = runner?.name ?? job.runner_id;
    const reason = `runner_lost: runner ${name} sent no heartbeat for ${ctx.config.runners.leaseSeconds} s`;
    const lastSeq = await appendSystemLine(ctx.db, job.build_id, `[roost] ${reason}; the build failed.`, now);
    const build = await transitionBuild(ctx, job.build_id, "fail", { exit_code: -1, failure_reason: reason });
    await notifyHub(ctx.logHubs, job.build_id, lastSeq);
    ctx.log.warn("runner lost", { runner_id: job.runner_id, job_id: job.id, build_id: job.build_id, build_failed: build !== null });
    await raiseIncident(ctx.db, now, {
      severity: "critical",
      reason: "runner_lost",
      message: `Runner ${name} stopped sending heartbeats while running a build; the build failed.`,
      repair_action: "Check the runner host (process, network, disk); restart `roost runner` there.",
      resource_kind: "runner",
      resource_id: job.runner_id,
      resource_name: name,
    });
  }
  return lost;
}

export async function flagUnroutableBuilds(ctx: AppContext): Promise<number> {
  const now = ctx.clock.now();
  const runners = await liveRunners(ctx.db, now, Math.max(60, ctx.config.runners.leaseSeconds * 2));
  const rows = await all(ctx.db, "SELECT b.*, p.name AS pipeline_name FROM builds b JOIN pipelines p ON p.id = b.pipeline_id WHERE b.status = 'queued' AND b.queued_at <= ? ORDER BY b.queued_at LIMIT 200", [now - UNROUTABLE_AFTER_SECONDS]);
  let flagged = 0;
  for (const row of rows) {
    const build = toBuild(row);
    const why = whyNobodyCanTake(runners, build.config_snapshot);
    if (why === build.runner_policy_block_reason) continue;
    await ctx.db.execute({ sql: "UPDATE builds SET runner_policy_block_reason = ? WHERE id = ? AND status = 'queued'", args: [why, build.id] });
    if (why) {
      flagged++;
      await raiseIncident(ctx.db, now, {
        severity: "warning",
        reason: "no_runner_for_build",
        message: `Build #${build.build_number} of pipeline ${row.pipeline_name} is waiting: ${why}.`,
        repair_action: "Connect a runner that matches the pipeline's platforms and runner_labels (docs/runners.md).",
        resource_kind: "pipeline",
        resource_id: build.pipeline_id,
        resource_name: String(row.pipeline_name),
      });
    } else {
      await resolveIncident(ctx.db, now, "pipeline", build.pipeline_id, "no_runner_for_build");
    }
  }
  return flagged;
}
