// The state changes of a job and its build that write more than one row. Each is one
// transaction (the finish: one guarded write batch, which is one too): it happens whole or not at all, so a crash, a full disk or a lost connection
// between two writes can never leave a finished job beside a running build (whose pipeline's
// next build would then wait forever for a concurrency slot). Listeners (SSE viewers, commit
// statuses) and the log hub hear of a change only after its commit.
import type { AppContext } from "../http/context.ts";
import { allOf, inTransaction, type Executor, type SqlCondition, type Statement } from "../db/client.ts";
import { findJobWithBuild, jobMarked, markJob, takeStartedHere, type Job } from "./jobs.ts";
import { appendSystemLineIn } from "../logs/store.ts";
import { findRunner } from "./store.ts";
import { raiseIncident } from "../daemon/incidents.ts";
import { buildEnvironmentRecorded, findBuild, toBuild, type Build } from "../builds/store.ts";
import { publishBuildChanged, transitionAfterRead, transitionBuildIn, transitioned } from "../builds/transition.ts";
import { formatTimeout } from "../pipelines/config.ts";
import type { ExecutorUsed, FlutterSdkUsed } from "./protocol-wire.ts";
import { planBuildPublishing, publishStatements } from "../publishing/plan.ts";
import { toDeployment } from "../publishing/deployments.ts";
import { environmentUnchanged } from "../publishing/environments.ts";

export interface JobOutcome {
  status: "succeeded" | "failed" | "canceled";
  exit_code: number;
  failure_reason?: string | undefined;
  flutter_sdk?: FlutterSdkUsed | undefined;
  executor?: ExecutorUsed | undefined;
}

type Deps = Pick<AppContext, "db" | "clock" | "events">;

/** How often a finish whose guard lost (its build moved since it was read) reads and goes again. */
const FINISH_TRIES = 5;

/**
 * A runner reports its job done: the job is marked finished and its build takes the outcome. A
 * build canceled meanwhile stays canceled (its transition is refused). A build that succeeded
 * makes its deployments in the same write (lib/publishing/plan.ts), so a successful build is
 * never left without the publishes its configuration asks for.
 *
 * One guarded write batch (finishStatements), after reads outside any transaction: on a remote
 * database one request holds the write lock, not one per statement. When the job or the build
 * is no longer as read, the batch writes nothing, and the finish reads them again and goes again.
 * `read` is the job's build as the caller read it (findJobWithBuild). Answers the build as it
 * stands after, and whether this call finished the job (false: another request finished it first).
 */
export async function finishJob(deps: Deps, job: Job, outcome: JobOutcome, read?: Build | null): Promise<{ finished: boolean; build: Build | null }> {
  let seen = { job, build: read === undefined ? await findBuild(deps.db, job.build_id) : read };
  for (let tries = 0; tries < FINISH_TRIES; tries++) {
    if (seen.job.status !== "running" || !seen.build) return { finished: false, build: seen.build };
    const finished = await finishAsPlanned(deps, job, seen.build, outcome);
    if (finished) return finished;
    // Another request finished the job, or the build moved (canceled, timed out) since the read.
    seen = (await findJobWithBuild(deps.db, job.id)) ?? { job: { ...seen.job, status: "finished" }, build: null };
  }
  throw new Error(`finishing job ${job.id}: its build kept changing under ${FINISH_TRIES} tries`);
}

/**
 * The finish of a job this process claimed, planned from the build as the claim started it
 * (takeStartedHere, lib/runners/jobs.ts) without reading the job or the build first: the batch's
 * guard also holds that the job is this runner's and that Roost has all its log lines (next_line
 * at least the runner's line count), which a finish otherwise checks on the job it read. Null when
 * the guard lost (the job finished, lost, or its log incomplete; the build canceled or timed out):
 * nothing was written, and the caller reads the job and finishes as usual, answering as it does.
 */
export async function finishStartedHere(
  deps: Deps,
  jobId: string,
  runnerId: string,
  outcome: JobOutcome & { line_count: number },
  build: Build,
  runnerStands?: SqlCondition,
): Promise<Build | null> {
  const finished = await finishAsPlanned(deps, { id: jobId, build_id: build.id }, build, outcome, { runnerId, lineCount: outcome.line_count, runnerStands });
  return finished ? finished.build : null;
}

/** One guarded batch planned from `build` as read (or as claimed); null when its guard lost and nothing was written. */
async function finishAsPlanned(
  deps: Deps,
  job: Pick<Job, "id" | "build_id">,
  build: Build,
  outcome: JobOutcome,
  holder?: JobHolder,
): Promise<{ finished: true; build: Build | null } | null> {
  const plan = await finishStatements(deps.db, job, build, outcome, deps.clock.now(), holder);
  const written = await deps.db.batch(plan.statements);
  if (written[plan.jobAt]!.rowsAffected !== 1) return null;
  // The build as the batch left it: RETURNed by the transition (which wrote, or the job would
  // not have), else read back last; null when it is gone (its project deleted meanwhile).
  const row = written[plan.updateAt ?? plan.statements.length - 1]!.rows[0];
  const after = row ? toBuild(row) : null;
  const moved = plan.updateAt !== null;
  await afterCommit(deps, job, moved ? after : null);
  for (const at of moved ? plan.deploymentsAt : []) {
    const d = toDeployment(written[at]!.rows[0]!);
    deps.events.publish({ type: "deployment.changed", deployment_id: d.id, build_id: d.build_id, project_id: d.project_id, status: d.status });
  }
  return { finished: true, build: after };
}

/** What a finish not planned from a read of its job also guards: the runner holds the job, and Roost has all its lines. */
interface JobHolder {
  runnerId: string;
  lineCount: number;
  /** The runner taken as remembered, not read: its row still stands (lib/runners/store.ts RememberedRunner). */
  runnerStands?: SqlCondition | undefined;
}

/**
 * The finish of a job read running, whose build was read as `build`, as statements for one batch.
 * Every statement is guarded by the state read (`when`: the job still running, the build's status
 * as read, and the environments its deployments were planned from as read), so either all of
 * them write or none does:
 *   1. what follows the build's change (commit status, notification) and, for a success, its
 *      deployments with their log lines; the Flutter SDK and executor the runner used;
 *   2. the transition, which changes the build's status, so after every statement that reads it;
 *   3. the job marked finished: right after the transition, guarded by its having written a row
 *      (changes(), https://www.sqlite.org/lang_corefunc.html#changes); where the build had
 *      already ended (canceled) there is no transition, and it is guarded by `when`;
 *   4. without a transition, the build read back, as the runner is answered (the transition
 *      RETURNs it, and nothing after it in the batch changes the build).
 */
async function finishStatements(
  db: Executor,
  job: Pick<Job, "id">,
  build: Build,
  outcome: JobOutcome,
  now: number,
  holder?: JobHolder,
): Promise<{ statements: Statement[]; jobAt: number; updateAt: number | null; deploymentsAt: number[] }> {
  const transition = outcome.status === "succeeded" ? "succeed" : outcome.status === "failed" ? "fail" : "cancel";
  const fields = { exit_code: outcome.exit_code, ...(outcome.failure_reason ? { failure_reason: outcome.failure_reason } : {}) };
  const guards: SqlCondition[] = [
    holder
      ? {
          sql: "EXISTS (SELECT 1 FROM jobs WHERE id = ? AND status = 'running' AND runner_id = ? AND next_line >= ?)",
          args: [job.id, holder.runnerId, holder.lineCount],
        }
      : { sql: "EXISTS (SELECT 1 FROM jobs WHERE id = ? AND status = 'running')", args: [job.id] },
    { sql: "(SELECT status FROM builds WHERE id = ?) = ?", args: [build.id, build.status] },
  ];
  if (holder?.runnerStands) guards.push(holder.runnerStands);
  const moved = transitioned(now, build, transition, fields);
  const publishes = moved?.status === "succeeded" ? await planBuildPublishing(db, moved) : [];
  for (const p of publishes) if (p.environment) guards.push(environmentUnchanged(build.project_id, p.environment.name, p.environment.read));
  const when = allOf(guards);

  const statements: Statement[] = [];
  const deploymentsAt: number[] = [];
  let updateAt: number | null = null;
  const guarded = moved && transitionAfterRead(moved, transition, fields, when);
  if (guarded) statements.push(...guarded.follows);
  for (const p of publishes) {
    if (p.deployment) deploymentsAt.push(statements.length);
    statements.push(...publishStatements(build.id, p, now, when));
  }
  // Recorded also when the build had already ended (canceled, timed out): it did run with it.
  const environment = buildEnvironmentRecorded(build.id, outcome, when);
  if (environment) statements.push(environment);
  if (guarded) {
    updateAt = statements.length;
    statements.push(guarded.update);
  }
  const jobAt = statements.length;
  statements.push(jobMarked(job.id, "finished", now, guarded ? { sql: "changes() = 1", args: [] } : when));
  // The transition RETURNs the build; without one it is read back.
  if (!guarded) statements.push({ sql: "SELECT * FROM builds WHERE id = ?", args: [build.id] });
  return { statements, jobAt, updateAt, deploymentsAt };
}

/**
 * A stopping runner hands back a job it has not started: the job ends and its build is queued
 * again for any runner (no started_at, no runner), in one transaction. Returns false when the job
 * was no longer running or its build had moved on (canceled meanwhile).
 */
export async function releaseJob(deps: Deps, job: Job): Promise<boolean> {
  takeStartedHere(deps.db, job.id);
  const now = deps.clock.now();
  const result = await inTransaction(deps.db, async (tx) => {
    if (!(await markJob(tx, job.id, "finished", now))) return null;
    return { build: await transitionBuildIn(tx, now, job.build_id, "release") };
  });
  if (!result) return false;
  await afterCommit(deps, job, result.build);
  // Wakes the claims waiting in this process, as a new build does.
  if (result.build) deps.events.publish({ type: "build.queued", build_id: result.build.id, project_id: result.build.project_id });
  return result.build !== null;
}

/**
 * A job whose lease expired: the job is lost, a system line says why, the build fails with exit
 * code -1 and an operator incident names the runner, in one transaction. Returns false when
 * another process (or the runner's own finish) got there first.
 */
export async function loseJob(deps: Deps & Pick<AppContext, "config" | "log">, job: Job): Promise<boolean> {
  takeStartedHere(deps.db, job.id);
  const now = deps.clock.now();
  const runner = await findRunner(deps.db, job.runner_id);
  const name = runner?.name ?? job.runner_id;
  const reason = `runner_lost: runner ${name} sent no heartbeat for ${deps.config.runners.leaseSeconds} s`;
  const result = await inTransaction(deps.db, async (tx) => {
    if (!(await markJob(tx, job.id, "lost", now))) return null;
    await appendSystemLineIn(tx, job.build_id, `[roost] ${reason}; the build failed.`, now);
    const build = await transitionBuildIn(tx, now, job.build_id, "fail", { exit_code: -1, failure_reason: reason });
    await raiseIncident(tx, now, {
      severity: "critical",
      reason: "runner_lost",
      message: `Runner ${name} stopped sending heartbeats while running a build; the build failed.`,
      repair_action: "Check the runner host (process, network, disk); restart `roost runner` there.",
      resource_kind: "runner",
      resource_id: job.runner_id,
      resource_name: name,
    });
    return { build };
  });
  if (!result) return false;
  deps.log.warn("runner lost", { runner_id: job.runner_id, job_id: job.id, build_id: job.build_id, build_failed: result.build !== null });
  await afterCommit(deps, job, result.build);
  return true;
}

/**
 * A running build past its timeout (docs/runners.md "Timeouts"), its runner silent about it: the
 * build fails with reason timeout and a system line says so, in one transaction. As with a cancel,
 * the job stays running: the runner hears at its next heartbeat that the build is over, stops the
 * job's process trees and finishes the job (its finish no longer moves the build); a runner that
 * is gone loses the job when its lease expires. Returns false when the build had already moved on.
 */
export async function timeOutBuild(deps: Deps, job: Job, timeoutSeconds: number): Promise<boolean> {
  const now = deps.clock.now();
  const reason = `timeout: the build ran past its timeout of ${formatTimeout(timeoutSeconds)}`;
  const build = await inTransaction(deps.db, async (tx) => {
    const failed = await transitionBuildIn(tx, now, job.build_id, "fail", { exit_code: 124, failure_reason: reason });
    if (failed) await appendSystemLineIn(tx, job.build_id, `[roost] ${reason}; Roost failed it and its runner stops it.`, now);
    return failed;
  });
  if (!build) return false;
  publishBuildChanged(deps.events, build);
  return true;
}

async function afterCommit(deps: Deps, job: Pick<Job, "id" | "build_id">, build: Build | null): Promise<void> {
  if (build) publishBuildChanged(deps.events, build);
  // Also when the build did not move (canceled before its job ended): live streams end once no
  // runner is sending, and learn it from this event (lib/live/log-feed.ts).
  deps.events.publish({ type: "job.finished", build_id: job.build_id, job_id: job.id });
}
