// Jobs: a runner's attempt at a build (docs/runners.md "Protocol"). The claim is one write
// batch: take the oldest queued build this runner may run (platform, labels, free
// max_concurrent slot), insert the job and move the build to running through the state machine;
// the unique index on running jobs per build refuses a second claimer in any process. A claim_id
// the runner already used returns the same job, so a lost claim response strands nothing.
import type { Db, Executor, Row, SqlCondition, Statement } from "../db/client.ts";
import type { InValue } from "../db/database.ts";
import { ALWAYS, all, num, numOrNull, one, rowMapper, str, strAs } from "../db/client.ts";
import { groupedRead } from "../db/grouped-read.ts";
import type { HeldCondition } from "../logs/store.ts";
import { newId } from "../auth/secrets.ts";
import { toBuild, type Build } from "../builds/store.ts";
import { transitionStatements } from "../builds/transition.ts";
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
 * A job, its build's status and where its log stands (lib/logs/store.ts logPositionFrom), in one
 * read: what a log append reads of its job (lib/logs/append-endpoint.ts). On a libSQL server the
 * appends of many runners that arrive together read their jobs in one statement (groupedRead).
 */
const jobForLogAppend = groupedRead({
  alone: `SELECT jobs.*, b.status AS build_status, s.last_seq, s.bytes, s.head_last_seq, s.cut_lines, s.cut_bytes
          FROM jobs JOIN builds AS b ON b.id = jobs.build_id LEFT JOIN build_log_stats AS s ON s.build_id = jobs.build_id WHERE jobs.id = +?`,
  grouped: `SELECT jobs.*, b.status AS build_status, s.last_seq, s.bytes, s.head_last_seq, s.cut_lines, s.cut_bytes
            FROM json_each(?) AS k JOIN jobs ON jobs.id = k.value JOIN builds AS b ON b.id = jobs.build_id LEFT JOIN build_log_stats AS s ON s.build_id = jobs.build_id`,
  keyColumn: "id",
});

export async function findJobForLogAppend(db: Executor, id: string): Promise<{ job: Job; buildStatus: string; row: Row } | null> {
  const row = await jobForLogAppend(db, id);
  return row ? { job: toJob(row), buildStatus: str(row, "build_status"), row } : null;
}

/**
 * What a log append's authentication and judge read (the runner's token works: its row holds the
 * hash it was read with and is not revoked; the job is this runner's and running; its build runs,
 * not being canceled), as a condition its write holds instead (lib/logs/append-endpoint.ts
 * RememberedWriter): how many of the [runner, token hash, job] of a JSON array hold.
 */
export function jobHeldForAppend(runner: { id: string; secretHash: string }, jobId: string): HeldCondition {
  return { counted: countHeldJobs, item: [runner.id, runner.secretHash, jobId] };
}

const countHeldJobs = (param: string) =>
  `SELECT count(*) FROM json_each(${param}) AS h
     JOIN runners AS r ON r.id = h.value ->> 0 AND r.secret_hash = h.value ->> 1 AND r.revoked_at IS NULL
     JOIN jobs AS j ON j.id = h.value ->> 2 AND j.runner_id = r.id AND j.status = 'running'
     JOIN builds AS b ON b.id = j.build_id AND b.status = 'running'`;

/**
 * A job and its build's status, in one read. `= +?`: a join filtered by a bare parameter is
 * compiled again on every call (docs/benchmarks.md, "The request path").
 */
export async function findJobWithBuildStatus(db: Executor, id: string): Promise<{ job: Job; buildStatus: string } | null> {
  const row = await one(db, "SELECT jobs.*, builds.status AS build_status FROM jobs JOIN builds ON builds.id = jobs.build_id WHERE jobs.id = +?", [id]);
  return row ? { job: toJob(row), buildStatus: str(row, "build_status") } : null;
}

/** A job and its build, read side by side: one request to a remote database. */
export async function findJobWithBuild(db: Executor, id: string): Promise<{ job: Job; build: Build | null } | null> {
  const [job, build] = await Promise.all([
    one(db, "SELECT * FROM jobs WHERE id = ?", [id]),
    one(db, "SELECT * FROM builds WHERE id = (SELECT build_id FROM jobs WHERE id = ?)", [id]),
  ]);
  return job ? { job: toJob(job), build: build ? toBuild(build) : null } : null;
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
  const keys = (await all(db, "SELECT DISTINCT runner_route FROM build_queue_groups")).map((r) => String(r.runner_route));
  queueRoutes.set(db, { keys, at: performance.now() });
  return takeable(runner, keys);
}

function takeable(runner: Runner, keys: string[]): string[] {
  return keys.filter((key) => whyRunnerCannotTakeRoute(runner, parseRouteKey(key)) === null);
}

/**
 * The queue's routes as this process last read them, per database. For ROUTES_KEPT_MS a claim
 * takes them as they were and goes straight to its write batch; one that takes nothing so reads
 * them (the queue drained, its pipelines are full, or a route is new since) and tries those.
 * A route new since is then looked at within that time, as a claim waiting for work looks at
 * builds queued through another process (the claim handler's RECHECK_MS).
 */
const queueRoutes = new WeakMap<Executor, { keys: string[]; at: number }>();
const ROUTES_KEPT_MS = 1000;

/** The build the runner would get now, without taking it. */
export async function nextClaimableBuild(db: Executor, runner: Runner): Promise<Build | null> {
  const routes = await routesFor(db, runner);
  if (routes.length === 0) return null;
  const row = await one(db, NEXT_CLAIMABLE, [JSON.stringify(routes)]);
  return row ? toBuild(row) : null;
}

/**
 * The claim, one write batch (one round trip to a remote server, which holds its write lock only
 * while the statements run there): the job is inserted for the build NEXT_CLAIMABLE picks under
 * that lock, the build starts (the `start` transition of lib/builds/state-machine.ts, named by the
 * job just inserted), the runner's job with this claim_id is read back, and what `alsoRead` names
 * of the build is read after it (a job's payload, lib/runners/protocol.ts). Daemons on several
 * hosts, or claims of one daemon sent together, never get the same build: each statement sees the
 * ones before it, and jobs_one_running_per_build refuses a second running job of a build anyway.
 * What needs no lock is read first, in one request: an earlier claim with this claim_id (a retried
 * claim gets the same job) and the routes of the queued builds; unless this process read the
 * routes less than ROUTES_KEPT_MS ago (a busy queue), when the batch goes first with those.
 *
 * `remembered`: the runner as this process remembers it, not read (lib/runners/store.ts
 * RememberedRunner): that batch inserts and reads back a job only where the runner's row still
 * stands; otherwise, and before anything else is read for the claim, `confirm` reads the runner
 * (throwing when its token no longer works) and the claim goes on with it.
 */
export async function claimJob(
  db: Db,
  runner: Runner,
  claimId: string,
  now: number,
  leaseSeconds: number,
  alsoRead: ReadsOfBuild = () => [],
  remembered?: { stands: SqlCondition; confirm(): Promise<Runner> },
): Promise<Claimed | null> {
  const kept = queueRoutes.get(db);
  let tried: string[] | null = null;
  let stood = remembered === undefined;
  if (kept && performance.now() - kept.at < ROUTES_KEPT_MS) {
    tried = takeable(runner, kept.keys);
    // An earlier claim with this claim_id is found by the batch, which reads the runner's job with it back.
    const took = tried.length > 0 ? await claimBatch(db, runner, claimId, now, leaseSeconds, tried, alsoRead, remembered?.stands) : null;
    if (took && took !== NOT_STANDING) return took;
    stood ||= took === null;
  }
  if (remembered) {
    runner = await remembered.confirm();
    // A batch whose runner did not stand tried nothing.
    if (!stood) tried = null;
    else if (tried !== null && !sameRoutes(takeable(runner, kept!.keys), tried)) tried = null;
  }
  const [earlier, routes] = await Promise.all([claimed(db, runner.id, claimId), routesFor(db, runner)]);
  if (earlier) return earlier;
  if (routes.length === 0 || (tried !== null && sameRoutes(routes, tried))) return null;
  return claimBatch(db, runner, claimId, now, leaseSeconds, routes, alsoRead) as Promise<Claimed | null>;
}

/** What a claim's batch answers when the runner as remembered no longer stands (it wrote nothing). */
const NOT_STANDING = "not standing";

function sameRoutes(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((key) => b.includes(key));
}

/** The claim's write batch for these routes: the job and its build, or null when it took none (and the runner had no job with this claim_id). */
async function claimBatch(
  db: Db,
  runner: Runner,
  claimId: string,
  now: number,
  leaseSeconds: number,
  routes: string[],
  alsoRead: ReadsOfBuild,
  stands?: SqlCondition,
): Promise<Claimed | null | typeof NOT_STANDING> {
  const jobId = newId();
  const [, started, , mine, ...read] = await db.batch([
    {
      // A WHERE (`true` when the runner was read): the parser takes an ON CONFLICT after a bare FROM as a join constraint (https://www.sqlite.org/lang_upsert.html).
      sql: `INSERT INTO jobs (id, build_id, runner_id, claim_id, status, lease_expires_at, created_at)
            SELECT ?, b.id, ?, ?, 'running', ?, ? FROM (${NEXT_CLAIMABLE}) b WHERE ${(stands ?? ALWAYS).sql}
            ON CONFLICT (runner_id, claim_id) DO NOTHING`,
      args: [jobId, runner.id, claimId, now + leaseSeconds, now, JSON.stringify(routes), ...(stands ?? ALWAYS).args],
    },
    ...transitionStatements(now, { sql: "(SELECT build_id FROM jobs WHERE id = ?)", args: [jobId] }, "start", {
      runner_id: runner.id,
      runner_policy_block_reason: null,
    }),
    stands
      ? // No row where the runner does not stand (not even a job it claimed earlier with this claim_id is answered); one of nulls where it has no job.
        {
          sql: `SELECT j.* FROM (SELECT 1) LEFT JOIN jobs AS j ON j.runner_id = +? AND j.claim_id = +? WHERE ${stands.sql}`,
          args: [runner.id, claimId, ...stands.args],
        }
      : { sql: "SELECT * FROM jobs WHERE runner_id = ? AND claim_id = ?", args: [runner.id, claimId] },
    ...alsoRead({ sql: "(SELECT build_id FROM jobs WHERE id = +?)", args: [jobId] }),
  ]);
  const row = mine!.rows[0];
  if (!row) return stands ? NOT_STANDING : null;
  if (row.id === null) return null;
  const job = toJob(row);
  // Another request with this claim_id (the runner retried through another daemon) claimed first.
  if (job.id !== jobId) return claimed(db, runner.id, claimId);
  const build = toBuild(started!.rows[0]!);
  startedBy(db).set(job.id, build);
  return { job, build, read: read.map((r) => r.rows) };
}

/**
 * The builds this process's claims started, by job id, for the job's finish
 * (lib/runners/job-lifecycle.ts finishStartedHere): a finish that reaches the daemon that claimed
 * its job plans its write from the build as the claim left it, and the write's guard holds that
 * the job and the build are still as claimed, instead of reading them first (on the local file
 * that read starts on a page cache that other requests' commits have cleared; on sqld it is a
 * request). Bounded (a daemon runs fewer jobs at once): the entry of a job that ends elsewhere is
 * pushed out by newer ones; one released or lost here is dropped then (lib/runners/job-lifecycle.ts).
 */
const startedHere = new WeakMap<Db, Map<string, Build>>();
const STARTED_KEPT = 1_000;

function startedBy(db: Db): Map<string, Build> {
  let builds = startedHere.get(db);
  if (!builds) startedHere.set(db, (builds = new Map()));
  // Oldest first (insertion order).
  if (builds.size >= STARTED_KEPT) builds.delete(builds.keys().next().value!);
  return builds;
}

/** The build as this process's claim of the job started it, once (null when another process claimed it, or it was pushed out). */
export function takeStartedHere(db: Db, jobId: string): Build | null {
  const builds = startedHere.get(db);
  const build = builds?.get(jobId) ?? null;
  builds?.delete(jobId);
  return build;
}

/**
 * Reads a claim makes in its write batch once it has taken a build, named by an SQL expression for
 * it (the rows a job's payload is made of, lib/runners/protocol.ts): under the write lock they see
 * the build just taken, on a remote database they leave in the claim's own request, and on the
 * local file they run on the writer's connection, whose pages the claim has just read, where a
 * read of its own after another request's commit starts on a cleared page cache.
 */
export type ReadsOfBuild = (build: { sql: string; args: InValue[] }) => Statement[];

/** A claimed job and its build, with the rows of the claim's ReadsOfBuild (null for a claim made earlier, which read none). */
export interface Claimed {
  job: Job;
  build: Build;
  read: Row[][] | null;
}

/** The job a runner already claimed with this claim_id, and its build. */
async function claimed(db: Executor, runnerId: string, claimId: string): Promise<Claimed | null> {
  const row = await one(db, "SELECT * FROM jobs WHERE runner_id = ? AND claim_id = ?", [runnerId, claimId]);
  if (!row) return null;
  const job = toJob(row);
  return { job, build: toBuild((await one(db, "SELECT * FROM builds WHERE id = ?", [job.build_id]))!), read: null };
}

/**
 * Renews the leases of the given running jobs of this runner; returns the ones whose build was
 * canceled (or is gone). The renewal and the read of the jobs' state are one batch: one round trip.
 */
export async function heartbeat(
  db: Db,
  runnerId: string,
  jobIds: string[],
  now: number,
  leaseSeconds: number,
): Promise<{ renewed: string[]; cancel: string[] }> {
  if (jobIds.length === 0) return { renewed: [], cancel: [] };
  const marks = jobIds.map(() => "?").join(", ");
  const [, state] = await db.batch([
    {
      sql: `UPDATE jobs SET lease_expires_at = ? WHERE runner_id = ? AND status = 'running' AND id IN (${marks})`,
      args: [now + leaseSeconds, runnerId, ...jobIds],
    },
    {
      sql: `SELECT j.id, j.status AS job_status, b.status AS build_status FROM jobs j JOIN builds b ON b.id = j.build_id WHERE j.runner_id = +? AND j.id IN (${marks})`,
      args: [runnerId, ...jobIds],
    },
  ]);
  const rows = state!.rows;
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
  return (await db.execute(jobMarked(id, status, now))).rowsAffected === 1;
}

/** markJob as a statement for a batch: the running job ends, where `when` also holds. */
export function jobMarked(id: string, status: "finished" | "lost", now: number, when: SqlCondition = ALWAYS): Statement {
  return {
    sql: `UPDATE jobs SET status = ?, finished_at = ? WHERE id = ? AND status = 'running' AND ${when.sql}`,
    args: [status, now, id, ...when.args],
  };
}

/** Whether a runner still holds a job of the build (a canceled build's runner may still be sending its last lines). */
export async function hasRunningJob(db: Executor, buildId: string): Promise<boolean> {
  return (await one(db, "SELECT 1 FROM jobs WHERE build_id = ? AND status = 'running'", [buildId])) !== null;
}
