// Builds (docs/api.md "Builds"). Status changes go only through lib/builds/transition.ts.
import type { Executor } from "../db/client.ts";
import { all, json, num, numOrNull, one, rowMapper, str, strAs, strOrNull } from "../db/client.ts";
import type { BuildStatus } from "./state-machine.ts";
import type { ExecutorUsed, FlutterSdkUsed } from "../runners/protocol-wire.ts";
import type { ConfigSnapshot } from "../pipelines/config.ts";
import { publicSnapshot } from "../pipelines/snapshot.ts";
import { parseDefinitionSource, type DefinitionSource } from "../pipelines/definition.ts";
import type { BuildResource, StepResult as StepResultSchema } from "./wire.ts";
import type { WireOf } from "../schemas/shared.ts";

export type StepResult = WireOf<typeof StepResultSchema>;
export type BuildTrigger = "manual" | "rerun" | "webhook" | "schedule";

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

/**
 * At most this many index entries a page walks past when a filter the index does not hold is
 * checked row by row (several filters at once); a page that stops there carries fewer builds and a
 * cursor to go on below them, so no request reads more than this many builds.
 */
export const LIST_SCAN_BUDGET = 1000;

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

type Condition = [sql: string, value: string];

/**
 * Newest first, by keyset: each page is one range of an index that holds the scope, the filter it
 * leads with and build_number, read from the cursor down (docs/api.md "Builds"). Further filters
 * are checked on at most LIST_SCAN_BUDGET rows of that range.
 */
export async function listBuilds(db: Executor, f: BuildFilter): Promise<BuildPage> {
  const scope: Condition = f.pipelineId ? ["pipeline_id = ?", f.pipelineId] : ["project_id = ?", f.projectId];
  const status: Condition | null = f.status ? ["status = ?", f.status] : null;
  const branch: Condition | null = f.branch !== undefined ? ["branch = ?", f.branch] : null;
  // trigger_kind: trigger_type, but 'schedule' for scheduled builds (a generated column, schema.sql migration 27).
  const trigger: Condition | null = f.triggerType ? ["trigger_kind = ?", f.triggerType] : null;
  // The index range to read: a pipeline's branch and status together (builds_pipeline_branch_status),
  // else one filter, the one likely to match fewest builds first (few builds are queued or running).
  const active = f.status === "queued" || f.status === "running" ? status : null;
  const leading: Condition[] =
    f.pipelineId && branch && status ? [branch, status] : [active ?? branch ?? status ?? trigger].filter((c): c is Condition => c !== null);
  const rest = [status, branch, trigger].filter((c): c is Condition => c !== null && !leading.includes(c));
  const range = [scope, ...leading];
  const rangeSql = range.map(([sql]) => sql).join(" AND ");
  const rangeArgs = range.map(([, v]) => v);
  const before = f.before ?? Number.MAX_SAFE_INTEGER;

  let builds: Build[];
  let nextBefore: number | null;
  if (rest.length === 0) {
    const rows = await all(db, `SELECT * FROM builds WHERE ${rangeSql} AND build_number < ? ORDER BY build_number DESC LIMIT +?`, [
      ...rangeArgs,
      before,
      f.limit + 1,
    ]);
    builds = rows.slice(0, f.limit).map(toBuild);
    nextBefore = rows.length > f.limit ? builds[builds.length - 1]!.build_number : null;
  } else {
    // The range's index holds every filter column, so the window and its checks read no build;
    // only the page's builds are read (schema.sql migration 27).
    // (SQLite reads trigger_kind from the index too, though its plan then says INDEX, not COVERING INDEX.)
    const checked = ["status", "branch", "trigger_kind"].filter((c) => rest.some(([sql]) => sql.startsWith(`${c} `)));
    const window = `SELECT rowid AS r, build_number AS n, ${checked.join(", ")} FROM builds WHERE ${rangeSql} AND build_number < ? ORDER BY build_number DESC LIMIT ${LIST_SCAN_BUDGET}`;
    const restSql = rest.map(([sql]) => `w.${sql}`).join(" AND ");
    const rows = await all(db, `SELECT b.* FROM (${window}) w JOIN builds b ON b.rowid = w.r WHERE ${restSql} ORDER BY w.n DESC LIMIT +?`, [
      ...rangeArgs,
      before,
      ...rest.map(([, v]) => v),
      f.limit + 1,
    ]);
    builds = rows.slice(0, f.limit).map(toBuild);
    if (rows.length > f.limit) nextBefore = builds[builds.length - 1]!.build_number;
    else {
      // Fewer matches than a page: were there more rows in the range than one page may read?
      const read = await one(db, `SELECT COUNT(*) AS rows, MIN(n) AS last FROM (${window})`, [...rangeArgs, before]);
      nextBefore = Number(read?.rows ?? 0) === LIST_SCAN_BUDGET ? Number(read!.last) : null;
    }
  }
  if (!f.withTotal) return { builds, nextBefore };
  return { builds, nextBefore, total: await countBuilds(db, f) };
}

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

/** What the runner reported about where a build ran: its Flutter SDK and its executor. */
export async function recordBuildEnvironment(
  tx: Executor,
  buildId: string,
  used: { flutter_sdk?: FlutterSdkUsed | null; executor?: ExecutorUsed | null },
): Promise<void> {
  if (!used.flutter_sdk && !used.executor) return;
  await tx.execute({
    sql: "UPDATE builds SET flutter_sdk = COALESCE(?, flutter_sdk), executor = COALESCE(?, executor) WHERE id = ?",
    args: [used.flutter_sdk ? JSON.stringify(used.flutter_sdk) : null, used.executor ? JSON.stringify(used.executor) : null, buildId],
  });
}

/** Why no runner may take a queued build (shown on the build until one can). */
export async function setRunnerPolicyBlock(db: Executor, buildId: string, why: string | null): Promise<void> {
  await db.execute({ sql: "UPDATE builds SET runner_policy_block_reason = ? WHERE id = ? AND status = 'queued'", args: [why, buildId] });
}
