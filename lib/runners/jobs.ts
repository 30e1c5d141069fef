// Jobs: a runner's attempt at a build (docs/runners.md "Protocol"). The claim is one write
// transaction: take the oldest queued build this runner may run (platform, labels, free
// max_concurrent slot), move it to running through the state machine, and insert the job; the
// unique index on running jobs per build refuses a second claimer in any process. A claim_id the
// runner already used returns the same job, so a lost claim response strands nothing.
import type { Db, Executor } from "../db/client.ts";
import { all, inTransaction, num, numOrNull, one, rowMapper, str, strAs } from "../db/client.ts";
import { newId } from "../auth/secrets.ts";
import { toBuild, type Build } from "../builds/store.ts";
import { transitionBuildIn } from "../builds/transition.ts";
import type { Runner } from "./store.ts";
import { parseRouteKey, whyRunnerCannotTakeRoute } from "./routing.ts";

/** One job: a build's claim by a runner (table jobs). */
export const toJob = rowMapper({
  id: str,
  build_id: str,
  runner_id: str,
  claim_id: str,
  status: strAs<"running" | "finished" | "lost">(),
  lease_expires_at: num,
  next_line: num,
  created_at: num,
  finished_at: numOrNull,
});
export type Job = ReturnType<typeof toJob>;

export async function findJob(db: Executor, id: string): Promise<Job | null> {
  const row = await one(db, "SELECT * FROM jobs WHERE id = ?", [id]);
  return row ? toJob(row) : null;
}

/**
 * The next build a runner may take: the oldest head (by queue_seq) of the queue's groups whose
 * route this runner serves and whose pipeline has a free slot (schema.sql migration 21). One
 * indexed look-up per group and a counter read for the running builds, so it costs the same with
 * one build queued or a hundred thousand waiting behind a full pipeline.
 */
const NEXT_CLAIMABLE = `SELECT b.* FROM build_queue_groups g
  JOIN builds b ON b.rowid = (SELECT q.rowid FROM builds q WHERE q.status = 'queued' AND q.pipeline_id = g.pipeline_id AND q.runner_route = g.runner_route AND q.own_max_concurrent = g.own_max_concurrent ORDER BY q.queue_seq LIMIT 1)
  WHERE g.runner_route IN (SELECT value FROM json_each(?))
    AND COALESCE((SELECT SUM(c.n) FROM build_counts c WHERE c.pipeline_id = g.pipeline_id AND c.status = 'running'), 0)
      < CASE g.own_max_concurrent WHEN 0 THEN (SELECT p.max_concurrent FROM pipelines p WHERE p.id = g.pipeline_id) ELSE g.own_max_concurrent END
  ORDER BY b.queue_seq LIMIT 1`;

/** The routes of the queued builds this runner may take (a few: one per distinct platforms and labels). */
async function routesFor(db: Executor, runner: Runner): Promise<string[]> {
  const routes = await all(db, "SELECT DISTINCT runner_route FROM build_queue_groups");
  return routes.map((r) => String(r.runner_route)).filter((key) => whyRunnerCannotTakeRoute(runner, parseRouteKey(key)) === null);
}

/** The build the runner would get now, without taking it. */
export async function nextClaimableBuild(db: Executor, runner: Runner): Promise<Build | null> {
  const routes = await routesFor(db, runner);
  if (routes.length === 0) return null;
  const row = await one(db, NEXT_CLAIMABLE, [JSON.stringify(routes)]);
  return row ? toBuild(row) : null;
}

export async function claimJob(db: Db, runner: Runner, claimId: string, now: number, leaseSeconds: number): Promise<{ job: Job; build: Build } | null> {
  return inTransaction(db, async (tx) => {
    const existing = await one(tx, "SELECT * FROM jobs WHERE runner_id = ? AND claim_id = ?", [runner.id, claimId]);
    if (existing) {
      const job = toJob(existing);
      const build = toBuild((await one(tx, "SELECT * FROM builds WHERE id = ?", [job.build_id]))!);
      return { job, build };
    }
    const candidate = await nextClaimableBuild(tx, runner);
    if (!candidate) return null;
    // The `start` transition of lib/builds/state-machine.ts, inside the claim's transaction.
    const build = await transitionBuildIn(tx, now, candidate.id, "start", { runner_id: runner.id, runner_policy_block_reason: null });
    if (!build) return null;
    const job = toJob(
      (await one(
        tx,
        "INSERT INTO jobs (id, build_id, runner_id, claim_id, status, lease_expires_at, created_at) VALUES (?, ?, ?, ?, 'running', ?, ?) RETURNING *",
        [newId(), build.id, runner.id, claimId, now + leaseSeconds, now],
      ))!,
    );
    return { job, build };
  });
}

/** Renews the leases of the given running jobs of this runner; returns the ones whose build was canceled (or is gone). */
export async function heartbeat(
  db: Executor,
  runnerId: string,
  jobIds: string[],
  now: number,
  leaseSeconds: number,
): Promise<{ renewed: string[]; cancel: string[] }> {
  if (jobIds.length === 0) return { renewed: [], cancel: [] };
  const marks = jobIds.map(() => "?").join(", ");
  await db.execute({
    sql: `UPDATE jobs SET lease_expires_at = ? WHERE runner_id = ? AND status = 'running' AND id IN (${marks})`,
    args: [now + leaseSeconds, runnerId, ...jobIds],
  });
  const rows = await all(
    db,
    `SELECT j.id, j.status AS job_status, b.status AS build_status FROM jobs j JOIN builds b ON b.id = j.build_id WHERE j.runner_id = +? AND j.id IN (${marks})`,
    [runnerId, ...jobIds],
  );
  const known = new Set(rows.map((r) => String(r.id)));
  const cancel = rows.filter((r) => r.job_status !== "running" || r.build_status !== "running").map((r) => String(r.id));
  for (const id of jobIds) if (!known.has(id)) cancel.push(id);
  return { renewed: rows.filter((r) => r.job_status === "running").map((r) => String(r.id)), cancel };
}

/** Jobs whose runner stopped renewing their lease. */
export async function expiredJobs(db: Executor, now: number): Promise<Job[]> {
  return (await all(db, "SELECT * FROM jobs WHERE status = 'running' AND lease_expires_at < ?", [now])).map(toJob);
}

export async function markJob(db: Executor, id: string, status: "finished" | "lost", now: number): Promise<boolean> {
  return (
    (await db.execute({ sql: "UPDATE jobs SET status = ?, finished_at = ? WHERE id = ? AND status = 'running'", args: [status, now, id] })).rowsAffected === 1
  );
}

/** Whether a runner still holds a job of the build (a canceled build's runner may still be sending its last lines). */
export async function hasRunningJob(db: Executor, buildId: string): Promise<boolean> {
  return (await one(db, "SELECT 1 FROM jobs WHERE build_id = ? AND status = 'running'", [buildId])) !== null;
}
