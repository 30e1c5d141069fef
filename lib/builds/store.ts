// Builds (docs/api.md "Builds"). Status changes go only through lib/builds/transition.ts.
import type { Executor, Row, SqlCondition, Statement } from "../db/client.ts";
import { ALWAYS, all, json, num, numOrNull, one, readInPieces, rowMapper, str, strAs, strOrNull } from "../db/client.ts";
import { BUILD_STATUSES, type BuildStatus } from "./state-machine.ts";
import type { ExecutorUsed, FlutterSdkUsed } from "../runners/protocol-wire.ts";
import type { ConfigSnapshot } from "../pipelines/config.ts";
import { publicSnapshot } from "../pipelines/snapshot.ts";
import { parseDefinitionSource, type DefinitionSource } from "../pipelines/definition.ts";
import type { BuildResource, StepResult as StepResultSchema } from "./wire.ts";
import type { WireOf } from "../schemas/shared.ts";

export type StepResult = WireOf<typeof StepResultSchema>;
/** What a listing filters builds by as trigger_type: the stored trigger_type, or 'schedule' for a build a schedule started. */
export const BUILD_TRIGGERS = ["manual", "rerun", "webhook", "schedule"] as const;
export type BuildTrigger = (typeof BUILD_TRIGGERS)[number];

/** One build (table builds); columns added by later migrations read as null where a row predates them. */
export const toBuild = rowMapper({
  id: str,
  build_number: num,
  project_id: str,
  pipeline_id: str,
  runner_id: strOrNull,
  source_build_id: strOrNull,
  branch: str,
  commit_sha: str,
  changelog: str,
  config_snapshot: json<ConfigSnapshot>(),
  /** Where config_snapshot came from: the pipeline file at a commit, or the API (docs/pipelines.md). */
  definition_source: (row, column): DefinitionSource => parseDefinitionSource(row[column]),
  context: (row, column): unknown => {
    const context = strOrNull(row, column);
    return context === null ? null : JSON.parse(context);
  },
  runner_policy_block_reason: strOrNull,
  status: strAs<BuildStatus>(),
  exit_code: numOrNull,
  failure_reason: strOrNull,
  concurrency_key: strOrNull,
  queued_at: num,
  started_at: numOrNull,
  finished_at: numOrNull,
  created_at: num,
  updated_at: num,
  created_by: strOrNull,
  // Scheduled builds are stored as manual ones with trigger_event "schedule" (schema.sql migration 9).
  trigger_type: (row, column): BuildTrigger => (str(row, "trigger_event") === "schedule" ? "schedule" : (str(row, column) as BuildTrigger)),
  /** The schedule that started this build (null when it was not scheduled, or the schedule is gone). */
  schedule_id: (row, column) => (row[column] === undefined ? null : strOrNull(row, column)),
  trigger_event: str,
  trigger_ref: str,
  trigger_actor: str,
  step_results: json<StepResult[]>(),
  /** When retention deleted the build's log lines (lib/retention/retention.ts); null while they are kept. */
  logs_deleted_at: (row, column) => (row[column] === undefined ? null : numOrNull(row, column)),
  /** When retention deleted the build's artifacts; null while they are kept. */
  artifacts_deleted_at: (row, column) => (row[column] === undefined ? null : numOrNull(row, column)),
  /** The Flutter SDK the build used, as its runner reported it; null before that (schema.sql migration 12). */
  flutter_sdk: (row, column) => (typeof row[column] === "string" ? (JSON.parse(row[column]) as FlutterSdkUsed) : null),
  /** Where the build ran (its executor, image by digest, limits), as its runner reported it; null before that (schema.sql migration 25). */
  executor: (row, column) => (typeof row[column] === "string" ? (JSON.parse(row[column]) as ExecutorUsed) : null),
});
export type Build = ReturnType<typeof toBuild>;

/** The API shape: secret env values in the snapshot are not returned. */
export function toPublicBuild(b: Build): WireOf<typeof BuildResource> {
  const { concurrency_key: _key, created_by: _by, ...rest } = b;
  return { ...rest, config_snapshot: publicSnapshot(b.config_snapshot) };
}

export async function findBuild(db: Executor, id: string): Promise<Build | null> {
  const row = await one(db, "SELECT * FROM builds WHERE id = ?", [id]);
  return row ? toBuild(row) : null;
}

/** One version of a build as the live feed tells versions apart (lib/live/build-feed.ts), without the build's larger columns. */
export interface BuildVersion {
  id: string;
  updated_at: number;
  version: string;
}

/** What changes whenever a build's state does: equal for two reads of one version of it. */
export function versionOf(b: Pick<Build, "updated_at" | "status" | "exit_code" | "runner_id" | "started_at" | "finished_at">): string {
  return `${b.updated_at}|${b.status}|${b.exit_code}|${b.runner_id}|${b.started_at}|${b.finished_at}`;
}

const toVersion = (row: Row): BuildVersion => ({
  id: str(row, "id"),
  updated_at: num(row, "updated_at"),
  version: versionOf({
    updated_at: num(row, "updated_at"),
    status: strAs<BuildStatus>()(row, "status"),
    exit_code: numOrNull(row, "exit_code"),
    runner_id: strOrNull(row, "runner_id"),
    started_at: numOrNull(row, "started_at"),
    finished_at: numOrNull(row, "finished_at"),
  }),
});

/** Where a read of build versions continues: after this change, in the order of builds_updated_at. */
export interface VersionPosition {
  updated_at: number;
  rowid: number;
}

/**
 * At most `limit` versions of the builds changed at or after `since` (updated_at), oldest change
 * first, continuing after `after` when given: seeks of the index builds_updated_at (schema.sql),
 * whose entries are ordered by (updated_at, rowid), and a few columns of each build. The position
 * is the rowid, not the id: the id is not in the index, and a keyset on (updated_at, id) sorted a
 * whole second's builds for every page. It is held in memory by one process while a feed reads
 * (lib/live/build-feed.ts), never handed out; SQLite keeps a row's rowid until the row is deleted
 * or the table is copied (a VACUUM may renumber a table without an INTEGER PRIMARY KEY,
 * https://www.sqlite.org/lang_vacuum.html, which Roost never runs on a live database).
 */
export async function buildVersionsPage(
  db: Executor,
  from: { since: number; after: VersionPosition | null },
  limit: number,
): Promise<(BuildVersion & { position: VersionPosition })[]> {
  const columns = "rowid AS position, id, updated_at, status, exit_code, runner_id, started_at, finished_at";
  const rows = await readInPieces(limit, (count, last: Row | undefined) => {
    const after = last ? { updated_at: num(last, "updated_at"), rowid: num(last, "position") } : from.after;
    // The rest of the position's second, then the seconds after it: each one seek of the index.
    // A row value, (updated_at, rowid) > (?, ?), seeks only by updated_at and walks every entry of
    // the position's second before it (a bulk change of one second made that quadratic).
    return after
      ? all(
          db,
          `SELECT * FROM (SELECT ${columns} FROM builds INDEXED BY builds_updated_at WHERE updated_at = +? AND rowid > ? ORDER BY rowid LIMIT +?)
           UNION ALL SELECT * FROM (SELECT ${columns} FROM builds WHERE updated_at > ? ORDER BY updated_at, rowid LIMIT +?)
           ORDER BY updated_at, position LIMIT +?`,
          [after.updated_at, after.rowid, count, after.updated_at, count, count],
        )
      : all(db, `SELECT ${columns} FROM builds WHERE updated_at >= ? ORDER BY updated_at, rowid LIMIT +?`, [from.since, count]);
  });
  return rows.map((row) => ({ ...toVersion(row), position: { updated_at: num(row, "updated_at"), rowid: num(row, "position") } }));
}

/**
 * The builds of `ids` that exist, in the order of `ids`: whole (config snapshot and changelog),
 * so read in pieces when they pass what a libSQL server answers at once (10 MB).
 */
export async function findBuilds(db: Executor, ids: string[]): Promise<Build[]> {
  const sorted = [...new Set(ids)].sort();
  const rows = await readInPieces(sorted.length, (count, last: Row | undefined) =>
    all(db, "SELECT * FROM builds WHERE id IN (SELECT value FROM json_each(?)) AND id > +? ORDER BY id LIMIT +?", [
      JSON.stringify(sorted),
      last ? str(last, "id") : "",
      count,
    ]),
  );
  const byId = new Map(rows.map((r) => [str(r, "id"), toBuild(r)]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/**
 * The newest build of a pipeline's branch in `status`, below a build number when one is given, as
 * SQL (its status and build_number, or no row) over SQL expressions for the pipeline, the branch and
 * the number, each written once per trigger (BRANCH_SEEKS_PER_STATUS): one seek of
 * builds_pipeline_branch_status_trigger to each trigger's newest entry, and the newest of those
 * (schema.sql migration 52).
 */
function newestOfBranchIn(status: BuildStatus, pipeline: string, branch: string, before?: string): string {
  const below = before === undefined ? "" : ` AND build_number < ${before}`;
  return BUILD_TRIGGERS.map(
    (trigger) =>
      `SELECT * FROM (SELECT status, build_number FROM builds WHERE pipeline_id = ${pipeline} AND branch = ${branch} AND status = '${status}' AND trigger_kind = '${trigger}'${below} ORDER BY build_number DESC LIMIT 1)`,
  ).join(" UNION ALL ");
}

/** How many times newestStatusOfBranch and newestBuildNumberOfBranch write each of their expressions for each status. */
export const BRANCH_SEEKS_PER_STATUS = BUILD_TRIGGERS.length;

/** Arguments for newestStatusOfBranch's `?`s: `args` (its pipeline, branch and number, as bound) once per seek. */
export function newestStatusArgs<T>(statuses: readonly BuildStatus[], args: T[]): T[] {
  return statuses.flatMap(() => Array.from({ length: BRANCH_SEEKS_PER_STATUS }, () => args).flat());
}

/**
 * The status of the newest build of a pipeline's branch among `statuses`, below a build number
 * when one is given, as an SQL expression over SQL expressions for the pipeline, the branch and the
 * number (each written BRANCH_SEEKS_PER_STATUS times per status: newestStatusArgs): one seek of
 * builds_pipeline_branch_status_trigger to each status's and trigger's newest entry, and the newest
 * of those. A walk down the branch's builds to the first of those statuses would read every build
 * of the other statuses on the way, as many as there are (docs/benchmarks.md, "Two statements of
 * every build change").
 */
export function newestStatusOfBranch(statuses: readonly BuildStatus[], pipeline: string, branch: string, before?: string): string {
  return `(SELECT status FROM (${statuses.map((status) => newestOfBranchIn(status, pipeline, branch, before)).join(" UNION ALL ")}) ORDER BY build_number DESC LIMIT 1)`;
}

/** The number of the newest build of a pipeline's branch in `status`, or NULL, as an SQL expression (as newestStatusOfBranch reads it). */
export function newestBuildNumberOfBranch(status: BuildStatus, pipeline: string, branch: string): string {
  return `(SELECT MAX(build_number) FROM (${newestOfBranchIn(status, pipeline, branch)}))`;
}

export interface BuildFilter {
  projectId: string;
  pipelineId?: string | undefined;
  status?: BuildStatus | undefined;
  branch?: string | undefined;
  triggerType?: string | undefined;
  limit: number;
  /** Only builds numbered below this (the page cursor). */
  before?: number | undefined;
  /** Also count the matching builds. */
  withTotal?: boolean | undefined;
}

export interface BuildPage {
  builds: Build[];
  /** The build number the next page continues below, or null after the last page. */
  nextBefore: number | null;
  total?: number;
}

type Column = "status" | "branch" | "trigger_kind";

/**
 * The listing indexes of builds (schema.sql migrations 27, 41, 42 and 52), one of each at both
 * scopes: after project_id or pipeline_id, the columns each is sought by, then build_number. The
 * builds of one status are read as one range per trigger of the trigger indexes, and the builds of
 * a branch as one range per status and trigger (a status given: per trigger) of the branch, status
 * and trigger index, merged: an index of their own was not worth what every build change wrote to
 * it (migrations 42 and 52: every push to another branch took a page of each).
 */
const LISTING_INDEXES: { columns: Column[] }[] = [
  { columns: [] }, // sqlite_autoindex_builds_2, builds_pipeline_number
  { columns: ["trigger_kind", "status"] }, // builds_project_trigger, builds_pipeline_trigger
  { columns: ["branch", "status", "trigger_kind"] }, // builds_project_branch_status_trigger, builds_pipeline_branch_status_trigger
];

/**
 * Every value a column can hold, for the columns a listing may go through value by value: status
 * and trigger_type are CHECKed on builds (schema.sql), and trigger_kind is trigger_type or 'schedule'.
 */
const EVERY_VALUE: Partial<Record<Column, readonly string[]>> = { status: BUILD_STATUSES, trigger_kind: BUILD_TRIGGERS };

/**
 * The index a page reads and the ranges it reads there: one range for every value of each index
 * column the filters leave open (a trigger alone: one per status), fewest ranges first. Each
 * combination of filters has such an index, so no page reads a build it does not answer with.
 */
function rangesFor(f: BuildFilter): { sql: string; args: string[] }[] {
  const filters: Partial<Record<Column, string>> = { status: f.status, branch: f.branch, trigger_kind: f.triggerType };
  const given = (Object.keys(filters) as Column[]).filter((c) => filters[c] !== undefined);
  const choices = LISTING_INDEXES.filter(
    (index) => given.every((c) => index.columns.includes(c)) && index.columns.every((c) => filters[c] !== undefined || EVERY_VALUE[c]),
  ).map((index) => {
    let ranges: Partial<Record<Column, string>>[] = [{}];
    for (const c of index.columns)
      ranges = ranges.flatMap((r) => (filters[c] !== undefined ? [filters[c]!] : EVERY_VALUE[c]!).map((value) => ({ ...r, [c]: value })));
    return ranges;
  });
  const ranges = choices.reduce((a, b) => (b.length < a.length ? b : a));
  // Bound `+?`, as beside every ORDER BY (tests/lib/db/bound-parameters.test.ts): a bare `?` had
  // the page compiled again on every call, and the plans are the same.
  const scope: [string, string] = f.pipelineId ? ["pipeline_id = +?", f.pipelineId] : ["project_id = +?", f.projectId];
  return ranges.map((r) => {
    const columns = Object.keys(r) as Column[];
    return { sql: [scope[0], ...columns.map((c) => `${c} = +?`)].join(" AND "), args: [scope[1], ...columns.map((c) => r[c]!)] };
  });
}

/**
 * Newest first, by keyset: each page reads an index that holds the scope, the filters and
 * build_number from the cursor down (docs/api.md "Builds"), so it reads only the builds it answers
 * with, at any number of builds. Where the index leads with a column the filters leave open, its
 * ranges (one per value, or pair of values: twenty for a branch alone) are merged by build number as SQLite reads them
 * (https://www.sqlite.org/lang_select.html#compound_select_statements), each read no further than
 * the page needs.
 */
export async function listBuilds(db: Executor, f: BuildFilter): Promise<BuildPage> {
  const ranges = rangesFor(f);
  // A build carries its config snapshot (a pipeline file is up to 256 KiB) and changelog, so a page
  // of 200 can pass what a libSQL server answers at once (10 MB): then it is read in smaller
  // requests, each below the last build read, the same builds as in one.
  const rows = await readInPieces(f.limit + 1, async (count, last: Row | undefined) => {
    const before = last ? Number(last.build_number) : (f.before ?? Number.MAX_SAFE_INTEGER);
    const args = [...ranges.flatMap((r) => [...r.args, before]), count];
    return ranges.length === 1
      ? await all(db, `SELECT * FROM builds WHERE ${ranges[0]!.sql} AND build_number < ? ORDER BY build_number DESC LIMIT +?`, args)
      : // The page's few rows are put in order here: an outer ORDER BY, which SQLite in Bun
        // leaves to the merge's order, is a sort of its own in the SQLite of @libsql/client.
        (
          await all(
            db,
            `SELECT b.* FROM (${ranges.map((r) => `SELECT rowid AS r, build_number AS n FROM builds WHERE ${r.sql} AND build_number < ?`).join(" UNION ALL ")} ORDER BY n DESC LIMIT +?) w
             JOIN builds b ON b.rowid = w.r`,
            args,
          )
        ).sort((a, b) => Number(b.build_number) - Number(a.build_number));
  });
  const builds = rows.slice(0, f.limit).map(toBuild);
  const nextBefore = rows.length > f.limit ? builds[builds.length - 1]!.build_number : null;
  if (!f.withTotal) return { builds, nextBefore };
  return { builds, nextBefore, total: await countBuilds(db, f) };
}

type Condition = [sql: string, value: string];

/**
 * The builds matching the filters, from counters kept by triggers in each build change's
 * transaction (schema.sql migrations 17 and 26): a few rows per pipeline, however many builds.
 */
async function countBuilds(db: Executor, f: BuildFilter): Promise<number> {
  const where: Condition[] = [f.pipelineId ? ["pipeline_id = ?", f.pipelineId] : ["project_id = ?", f.projectId]];
  if (f.branch !== undefined) where.push(["branch = ?", f.branch]);
  if (f.status) where.push(["status = ?", f.status]);
  if (f.triggerType) where.push(["trigger_kind = ?", f.triggerType]);
  const table = f.branch !== undefined ? "build_branch_counts" : "build_counts";
  const row = await one(
    db,
    `SELECT COALESCE(SUM(n), 0) AS n FROM ${table} WHERE ${where.map(([sql]) => sql).join(" AND ")}`,
    where.map(([, v]) => v),
  );
  return Number(row?.n ?? 0);
}

/**
 * Builds by status over every project, read from the counters kept in each build change's
 * transaction (build_counts, schema.sql migration 17): a few rows per pipeline, whatever the
 * number of builds.
 */
export async function buildCountsByStatus(db: Executor): Promise<Map<string, number>> {
  const rows = await all(db, "SELECT status, SUM(n) AS n FROM build_counts GROUP BY status");
  return new Map(rows.map((r) => [str(r, "status"), Number(r.n)]));
}

/**
 * What the runner reported about where a build ran (its Flutter SDK and its executor), as a
 * statement for a batch, written only where `when` holds; null when the runner reported nothing.
 */
export function buildEnvironmentRecorded(
  buildId: string,
  used: { flutter_sdk?: FlutterSdkUsed | null; executor?: ExecutorUsed | null },
  when: SqlCondition = ALWAYS,
): Statement | null {
  if (!used.flutter_sdk && !used.executor) return null;
  return {
    sql: `UPDATE builds SET flutter_sdk = COALESCE(?, flutter_sdk), executor = COALESCE(?, executor) WHERE id = ? AND ${when.sql}`,
    args: [used.flutter_sdk ? JSON.stringify(used.flutter_sdk) : null, used.executor ? JSON.stringify(used.executor) : null, buildId, ...when.args],
  };
}

/** Why no runner may take a queued build (shown on the build until one can). */
export async function setRunnerPolicyBlock(db: Executor, buildId: string, why: string | null): Promise<void> {
  await db.execute({ sql: "UPDATE builds SET runner_policy_block_reason = ? WHERE id = ? AND status = 'queued'", args: [why, buildId] });
}
