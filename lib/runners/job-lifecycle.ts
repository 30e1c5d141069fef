// The state changes of a job and its build that write more than one row. Each is one
// transaction: it happens whole or not at all, so a crash, a full disk or a lost connection
// between two writes can never leave a finished job beside a running build (whose pipeline's
// next build would then wait forever for a concurrency slot). Listeners (SSE viewers, commit
// statuses) and the log hub hear of a change only after its commit.
import type { AppContext } from "../http/context.ts";
import { inTransaction } from "../db/client.ts";
import { markJob, type Job } from "./jobs.ts";
import { appendSystemLineIn } from "../logs/store.ts";
import { findRunner } from "./store.ts";
import { raiseIncident } from "../daemon/incidents.ts";
import { recordBuildEnvironment, type Build } from "../builds/store.ts";
import { publishBuildChanged, transitionBuildIn } from "../builds/transition.ts";
import { formatTimeout } from "../pipelines/config.ts";
import type { ExecutorUsed, FlutterSdkUsed } from "./protocol-wire.ts";
import { planBuildDeployments } from "../publishing/plan.ts";
import type { Deployment } from "../publishing/deployments.ts";

export interface JobOutcome {
  status: "succeeded" | "failed" | "canceled";
  exit_code: number;
  failure_reason?: string | undefined;
  flutter_sdk?: FlutterSdkUsed | undefined;
  executor?: ExecutorUsed | undefined;
}

type Deps = Pick<AppContext, "db" | "clock" | "events">;

/**
 * A runner reports its job done: the job is marked finished and its build takes the outcome, in
 * one transaction. A build canceled meanwhile stays canceled (its transition is refused). A build
 * that succeeded makes its deployments in the same transaction (lib/publishing/plan.ts), so a
 * successful build is never left without the publishes its configuration asks for. Returns
 * false when the job was no longer running (another request finished it first).
 */
export async function finishJob(deps: Deps, job: Job, outcome: JobOutcome): Promise<boolean> {
  const now = deps.clock.now();
  const transition = outcome.status === "succeeded" ? "succeed" : outcome.status === "failed" ? "fail" : "cancel";
  const result = await inTransaction(deps.db, async (tx) => {
    if (!(await markJob(tx, job.id, "finished", now))) return null;
    // Recorded also when the build had already ended (canceled, timed out): it did run with it.
    // Started together with the transition: on a remote database one request, not two.
    const [, build] = await Promise.all([
      recordBuildEnvironment(tx, job.build_id, outcome),
      transitionBuildIn(tx, now, job.build_id, transition, {
        exit_code: outcome.exit_code,
        ...(outcome.failure_reason ? { failure_reason: outcome.failure_reason } : {}),
      }),
    ]);
    const deployments: Deployment[] = build?.status === "succeeded" ? await planBuildDeployments(tx, build, now) : [];
    return { build, deployments };
  });
  if (!result) return false;
  await afterCommit(deps, job, result.build);
  for (const d of result.deployments)
    deps.events.publish({ type: "deployment.changed", deployment_id: d.id, build_id: d.build_id, project_id: d.project_id, status: d.status });
  return true;
}

/**
 * A stopping runner hands back a job it has not started: the job ends and its build is queued
 * again for any runner (no started_at, no runner), in one transaction. Returns false when the job
 * was no longer running or its build had moved on (canceled meanwhile).
 */
export async function releaseJob(deps: Deps, job: Job): Promise<boolean> {
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

async function afterCommit(deps: Deps, job: Job, build: Build | null): Promise<void> {
  if (build) publishBuildChanged(deps.events, build);
  // Also when the build did not move (canceled before its job ended): live streams end once no
  // runner is sending, and learn it from this event (lib/live/log-feed.ts).
  deps.events.publish({ type: "job.finished", build_id: job.build_id, job_id: job.id });
}
