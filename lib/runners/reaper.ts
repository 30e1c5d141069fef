// What happens when runners go quiet or none can take a build (docs/runners.md):
// - a job whose lease expired (no heartbeat or log for lease_seconds) is lost: its build fails
//   at once with exit code -1 and a reason saying which runner vanished, the line is written to
//   the log, and an operator incident is raised for the runner, all in one transaction
//   (lib/runners/job-lifecycle.ts). Nothing is silently re-run.
// - a build queued longer than UNROUTABLE_AFTER_SECONDS that no live runner may take gets a
//   runner_policy_block_reason and an operator incident for its pipeline; it stays queued and
//   starts as soon as a suitable runner connects.
// - a running build past its timeout plus one lease period fails with reason timeout
//   (lib/runners/job-lifecycle.ts timeOutBuild); its runner stops it at its next heartbeat.
import type { AppContext } from "../http/context.ts";
import type { Row } from "../db/client.ts";
import { all, readInPieces } from "../db/client.ts";
import { expiredJobs, toJob } from "./jobs.ts";
import { liveRunners } from "./store.ts";
import { raiseIncident, resolveIncident } from "../daemon/incidents.ts";
import { setRunnerPolicyBlock, toBuild } from "../builds/store.ts";
import { whyNobodyCanTake } from "./routing.ts";

export const UNROUTABLE_AFTER_SECONDS = 30;
/** The queued builds one pass looks at, longest waiting first. */
const UNROUTABLE_PAGE = 200;

// A build's end (lib/runners/job-lifecycle.ts: its publishing plan, the pipeline file's and the
// publishers' schemas) is imported by the first pass that finds a job to end, not by every pass
// of an idle daemon (docs/benchmarks.md, "idle RSS").
const lifecycle = () => import("./job-lifecycle.ts");

export async function reapLostJobs(ctx: AppContext): Promise<number> {
  const expired = await expiredJobs(ctx.db, ctx.clock.now());
  if (expired.length === 0) return 0;
  const { loseJob } = await lifecycle();
  let lost = 0;
  for (const job of expired) {
    if (await loseJob(ctx, job)) lost++; // false: another process or the runner's finish got there first
  }
  return lost;
}

/**
 * Running builds past their timeout (execution_config.timeout_seconds; DEFAULT_TIMEOUT_SECONDS for
 * builds frozen before timeouts existed) plus one lease period fail with reason timeout. The
 * runner enforces the timeout itself, on time and with its own log lines; this is for a runner
 * that keeps sending heartbeats but no longer does (hung, or too old to know timeouts).
 */
export async function reapTimedOutBuilds(ctx: AppContext): Promise<number> {
  const now = ctx.clock.now();
  const rows = await all(
    ctx.db,
    // Only the timeout of each build's config snapshot: a snapshot is up to 256 KiB (its pipeline
    // file), and those of every running build passed what a libSQL server answers at once (10 MB).
    `SELECT j.*, b.started_at AS build_started_at, json_extract(b.config_snapshot, '$.execution_config.timeout_seconds') AS timeout_seconds
       FROM jobs j JOIN builds b ON b.id = j.build_id WHERE j.status = 'running' AND b.status = 'running'`,
  );
  if (rows.length === 0) return 0;
  const [{ timeOutBuild }, { DEFAULT_TIMEOUT_SECONDS }] = await Promise.all([lifecycle(), import("../pipelines/config.ts")]);
  let failed = 0;
  for (const row of rows) {
    const timeout = row.timeout_seconds === null || row.timeout_seconds === undefined ? DEFAULT_TIMEOUT_SECONDS : Number(row.timeout_seconds);
    if (Number(row.build_started_at) + timeout + ctx.config.runners.leaseSeconds > now) continue;
    if (await timeOutBuild(ctx, toJob(row), timeout)) failed++;
  }
  return failed;
}

export async function flagUnroutableBuilds(ctx: AppContext): Promise<number> {
  const now = ctx.clock.now();
  const runners = await liveRunners(ctx.db, now, Math.max(60, ctx.config.runners.leaseSeconds * 2));
  // Whole builds (a config snapshot is up to 256 KiB, with a changelog): 200 can pass what a libSQL
  // server answers at once (10 MB), and are then read in smaller requests, each after the last.
  const rows = await readInPieces(UNROUTABLE_PAGE, (count, last: Row | undefined) =>
    all(
      ctx.db,
      `SELECT b.*, p.name AS pipeline_name FROM builds b JOIN pipelines p ON p.id = b.pipeline_id
        WHERE b.status = 'queued' AND b.queued_at <= ? ${last ? "AND (b.queued_at, b.id) > (+?, +?)" : ""} ORDER BY b.queued_at, b.id LIMIT +?`,
      last ? [now - UNROUTABLE_AFTER_SECONDS, last.queued_at!, last.id!, count] : [now - UNROUTABLE_AFTER_SECONDS, count],
    ),
  );
  let flagged = 0;
  for (const row of rows) {
    const build = toBuild(row);
    const why = whyNobodyCanTake(runners, build.config_snapshot);
    if (why === build.runner_policy_block_reason) continue;
    await setRunnerPolicyBlock(ctx.db, build.id, why);
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
