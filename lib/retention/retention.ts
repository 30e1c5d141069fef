// Retention (docs/operations.md "Retention"): how long finished builds keep their logs and
// artifacts. The build rows stay (history, numbers, statuses); their log lines and artifact files
// go, and logs_deleted_at / artifacts_deleted_at say when.
//
// A policy has three limits, each 0 for "no limit": logs older than log_retention_days, artifacts
// older than artifact_retention_days, and, per pipeline, everything but the newest keep_builds
// builds. The instance defaults come from the configuration; a project may override each
// (project_operation_settings, NULL = the default). Never touched:
//   - the latest successful build of each pipeline and branch (the build a team goes back to, as
//     GitLab keeps the artifacts of the most recent successful job per ref:
//     https://docs.gitlab.com/ci/jobs/job_artifacts/#keep-artifacts-from-most-recent-successful-jobs);
//   - builds not finished, or finished less than GRACE_SECONDS ago (a runner may still be sending).
//
// Enforcement runs in the background in bounded batches: at most `limit` builds (and about
// MAX_BATCH_LOG_BYTES of log lines) per pass, in one write transaction, so a first pass over a
// year of history never holds the writer for long. Artifact files are unlinked after that
// transaction commits: a file without a row is only wasted space, a row without its file would
// be a broken download. Freed database pages go back to the file system with
// PRAGMA incremental_vacuum when the database was created with auto_vacuum = INCREMENTAL
// (https://www.sqlite.org/pragma.html#pragma_auto_vacuum; lib/db/bun-sqlite.ts sets it on new files).
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { AppContext } from "../http/context.ts";
import type { Executor } from "../db/client.ts";
import type { Row } from "../db/database.ts";
import { all, inTransaction, num, numOrNull, one, str } from "../db/client.ts";
import { artifactKey } from "../object-store/store.ts";
import { newestBuildNumberOfBranch } from "../builds/store.ts";
import { logArchiveKey } from "../logs/archive.ts";
import { raiseIncident, resolveIncident } from "../daemon/incidents.ts";
import type { MetricsRegistry } from "../daemon/metrics.ts";

const DAY = 86_400;
/** A build finished less than this long ago is left alone whatever the limits say. */
export const GRACE_SECONDS = 3600;
/** Builds per pass (one write transaction). */
export const RETENTION_BATCH = 500;
/** A pass stops adding builds once their logs reach this many bytes, so one transaction stays short. */
export const MAX_BATCH_LOG_BYTES = 256 * 1024 * 1024;

export interface RetentionPolicy {
  log_retention_days: number;
  artifact_retention_days: number;
  keep_builds: number;
}

export interface RetentionOverrides {
  log_retention_days: number | null;
  artifact_retention_days: number | null;
  keep_builds: number | null;
}

export function instancePolicy(config: AppContext["config"]): RetentionPolicy {
  const r = config.retention;
  return { log_retention_days: r.logDays, artifact_retention_days: r.artifactDays, keep_builds: r.keepBuilds };
}

function effective(defaults: RetentionPolicy, o: RetentionOverrides): RetentionPolicy {
  return {
    log_retention_days: o.log_retention_days ?? defaults.log_retention_days,
    artifact_retention_days: o.artifact_retention_days ?? defaults.artifact_retention_days,
    keep_builds: o.keep_builds ?? defaults.keep_builds,
  };
}

const keepsEverything = (p: RetentionPolicy) => p.log_retention_days === 0 && p.artifact_retention_days === 0 && p.keep_builds === 0;

export async function projectRetention(
  db: Executor,
  config: AppContext["config"],
  projectId: string,
): Promise<RetentionOverrides & { effective: RetentionPolicy; instance_default: RetentionPolicy }> {
  const row = await one(db, "SELECT log_retention_days, artifact_retention_days, keep_builds FROM project_operation_settings WHERE project_id = ?", [
    projectId,
  ]);
  const overrides: RetentionOverrides = {
    log_retention_days: row ? numOrNull(row, "log_retention_days") : null,
    artifact_retention_days: row ? numOrNull(row, "artifact_retention_days") : null,
    keep_builds: row ? numOrNull(row, "keep_builds") : null,
  };
  const defaults = instancePolicy(config);
  return { ...overrides, effective: effective(defaults, overrides), instance_default: defaults };
}

export async function setProjectRetention(db: Executor, projectId: string, o: RetentionOverrides, now: number): Promise<void> {
  await db.execute({
    sql: `INSERT INTO project_operation_settings (project_id, log_retention_days, artifact_retention_days, keep_builds, updated_at) VALUES (?, ?, ?, ?, ?)
          ON CONFLICT (project_id) DO UPDATE SET log_retention_days = excluded.log_retention_days, artifact_retention_days = excluded.artifact_retention_days,
            keep_builds = excluded.keep_builds, updated_at = excluded.updated_at`,
    args: [projectId, o.log_retention_days, o.artifact_retention_days, o.keep_builds, now],
  });
}

/** Every pipeline with the policy in effect for it. */
async function pipelinePolicies(db: Executor, defaults: RetentionPolicy): Promise<{ pipeline_id: string; project_id: string; policy: RetentionPolicy }[]> {
  const rows = await all(
    db,
    `SELECT p.id, p.project_id, s.log_retention_days, s.artifact_retention_days, s.keep_builds
       FROM pipelines p LEFT JOIN project_operation_settings s ON s.project_id = p.project_id ORDER BY p.id`,
  );
  return rows.map((r) => ({
    pipeline_id: str(r, "id"),
    project_id: str(r, "project_id"),
    policy: effective(defaults, {
      log_retention_days: numOrNull(r, "log_retention_days"),
      artifact_retention_days: numOrNull(r, "artifact_retention_days"),
      keep_builds: numOrNull(r, "keep_builds"),
    }),
  }));
}

interface Due {
  id: string;
  logs: boolean;
  artifacts: boolean;
  log_bytes: number;
}

/**
 * The builds of one pipeline whose logs or artifacts are past the policy, oldest first. NULL
 * bounds switch a limit off (a comparison with NULL is never true). Each reason is one index range
 * that holds only the builds due for it (schema.sql migration 32): logs past their age
 * (builds_logs_kept, by finish time), artifacts past theirs (builds_artifacts_kept), and builds
 * below keep_builds whose logs or artifacts are still kept (builds_retention_pending). A pass over
 * a pipeline with a million recent builds reads none of them; what a range holds beyond the due
 * builds is the latest successful build of each branch, kept for good.
 */
async function dueBuilds(db: Executor, pipelineId: string, policy: RetentionPolicy, now: number, limit: number): Promise<Due[]> {
  let keepFrom: number | null = null;
  if (policy.keep_builds > 0) {
    const row = await one(db, "SELECT build_number FROM builds WHERE pipeline_id = +? ORDER BY build_number DESC LIMIT 1 OFFSET +?", [
      pipelineId,
      policy.keep_builds - 1,
    ]);
    keepFrom = row ? num(row, "build_number") : null;
  }
  const logBefore = policy.log_retention_days > 0 ? now - policy.log_retention_days * DAY : null;
  const artifactBefore = policy.artifact_retention_days > 0 ? now - policy.artifact_retention_days * DAY : null;
  if (keepFrom === null && logBefore === null && artifactBefore === null) return [];
  // Finished before `settled` too (a runner may still be sending): folded into each age's bound, so
  // the bound of the index range is the age's, not the grace period's (which holds nearly every build).
  const settled = now - GRACE_SECONDS + 1;
  const args = {
    pipeline_id: pipelineId,
    log_before: logBefore,
    artifact_before: artifactBefore,
    keep_from: keepFrom,
    log_until: logBefore === null ? null : Math.min(logBefore, settled),
    artifact_until: artifactBefore === null ? null : Math.min(artifactBefore, settled),
    settled,
    limit,
  };
  // Finished: NOT IN the two other statuses, the words of the retention indexes' WHERE, which the
  // planner must find here to read them (schema.sql migration 50).
  const select = `SELECT b.id, b.build_number,
            b.logs_deleted_at IS NULL AND (COALESCE(b.finished_at, b.updated_at) < :log_before OR b.build_number < :keep_from) AS logs_due,
            b.artifacts_deleted_at IS NULL AND (COALESCE(b.finished_at, b.updated_at) < :artifact_before OR b.build_number < :keep_from) AS artifacts_due,
            COALESCE((SELECT s.bytes FROM build_log_stats s WHERE s.build_id = b.id), 0) AS log_bytes
       FROM builds b
      WHERE b.pipeline_id = :pipeline_id
        AND b.status NOT IN ('queued', 'running')
        AND NOT (b.status = 'succeeded' AND b.build_number =
              ${newestBuildNumberOfBranch("succeeded", "b.pipeline_id", "b.branch")})`;
  const ranges: string[] = [];
  if (logBefore !== null)
    ranges.push("AND b.logs_deleted_at IS NULL AND COALESCE(b.finished_at, b.updated_at) < :log_until ORDER BY COALESCE(b.finished_at, b.updated_at)");
  if (artifactBefore !== null)
    ranges.push(
      "AND b.artifacts_deleted_at IS NULL AND COALESCE(b.finished_at, b.updated_at) < :artifact_until ORDER BY COALESCE(b.finished_at, b.updated_at)",
    );
  if (keepFrom !== null)
    ranges.push(
      "AND (b.logs_deleted_at IS NULL OR b.artifacts_deleted_at IS NULL) AND b.build_number < :keep_from AND COALESCE(b.finished_at, b.updated_at) < :settled ORDER BY b.build_number",
    );
  const found = new Map<string, Row>();
  for (const range of ranges) for (const r of await all(db, `${select} ${range} LIMIT +:limit`, args)) found.set(str(r, "id"), r);
  const rows = [...found.values()].sort((x, y) => num(x, "build_number") - num(y, "build_number")).slice(0, limit);
  return rows.map((r) => ({ id: str(r, "id"), logs: num(r, "logs_due") === 1, artifacts: num(r, "artifacts_due") === 1, log_bytes: num(r, "log_bytes") }));
}

export interface RetentionPass {
  /** Builds whose logs were deleted. */
  logs: number;
  log_lines: number;
  log_bytes: number;
  /** Artifact files deleted. */
  artifacts: number;
  artifact_bytes: number;
  /** Whether builds were left for the next pass (the batch was full). */
  more: boolean;
}

function retentionCounters(metrics: MetricsRegistry) {
  return {
    deleted: metrics.counter(
      "roost_retention_deleted_total",
      "Deleted by retention: kind=logs counts builds whose log was deleted, kind=artifacts artifact files.",
    ),
    bytes: metrics.counter("roost_retention_reclaimed_bytes_total", "Bytes of build logs and artifact files deleted by retention, by kind."),
  };
}

const placeholders = (n: number) => Array.from({ length: n }, () => "?").join(", ");

/**
 * One retention pass: at most `limit` builds, one transaction; then their artifact files are
 * unlinked and the freed pages returned to the file system.
 */
export async function enforceRetention(
  ctx: Pick<AppContext, "db" | "clock" | "config" | "metrics" | "log" | "objects">,
  limit = RETENTION_BATCH,
): Promise<RetentionPass> {
  const now = ctx.clock.now();
  const pass: RetentionPass = { logs: 0, log_lines: 0, log_bytes: 0, artifacts: 0, artifact_bytes: 0, more: false };
  const due: Due[] = [];
  let logBytes = 0;
  for (const { pipeline_id, policy } of await pipelinePolicies(ctx.db, instancePolicy(ctx.config))) {
    if (due.length >= limit || logBytes >= MAX_BATCH_LOG_BYTES) {
      pass.more = true;
      break;
    }
    const found = await dueBuilds(ctx.db, pipeline_id, policy, now, limit - due.length + 1);
    for (const d of found) {
      if (due.length >= limit || logBytes >= MAX_BATCH_LOG_BYTES) {
        pass.more = true;
        break;
      }
      due.push(d);
      if (d.logs) logBytes += d.log_bytes;
    }
  }
  if (due.length === 0) return pass;

  const logIds = due.filter((d) => d.logs).map((d) => d.id);
  const artifactIds = due.filter((d) => d.artifacts).map((d) => d.id);
  // What the transaction deleted is counted inside its work and returned: the write queue may run
  // the work again from its start (lib/db/write-queue.ts), and only the run that committed counts.
  const done = await inTransaction(ctx.db, async (tx) => {
    const counted = { logs: 0, log_lines: 0, log_bytes: 0, artifacts: 0, artifact_bytes: 0 };
    let archivedLogs: string[] = [];
    // Marking first with "IS NULL" makes the pass idempotent across processes: a build another
    // process has just done is not marked again, and only the marking process deletes.
    const markedLogs = logIds.length
      ? (
          await all(tx, `UPDATE builds SET logs_deleted_at = ? WHERE id IN (${placeholders(logIds.length)}) AND logs_deleted_at IS NULL RETURNING id`, [
            now,
            ...logIds,
          ])
        ).map((r) => str(r, "id"))
      : [];
    if (markedLogs.length) {
      const bytes = await one(
        tx,
        `SELECT COALESCE(SUM(bytes), 0) AS n FROM build_log_stats WHERE build_id IN (${placeholders(markedLogs.length)})`,
        markedLogs,
      );
      const deleted = await tx.execute({ sql: `DELETE FROM build_logs WHERE build_id IN (${placeholders(markedLogs.length)})`, args: markedLogs });
      archivedLogs = (
        await all(tx, `SELECT build_id FROM build_log_stats WHERE archived_seq > 0 AND build_id IN (${placeholders(markedLogs.length)})`, markedLogs)
      ).map((r) => str(r, "build_id"));
      // A log deleted before the archive pass moved it leaves the logs waiting to be archived
      // (build_log_stats_unarchived) here, in the transaction that deletes it: archived_seq 0,
      // nothing in the store. Otherwise every archive pass would read it again, forever.
      await tx.execute({
        sql: `UPDATE build_log_stats SET archived_seq = 0 WHERE archived_seq IS NULL AND build_id IN (${placeholders(markedLogs.length)})`,
        args: markedLogs,
      });
      counted.logs = markedLogs.length;
      counted.log_lines = deleted.rowsAffected;
      counted.log_bytes = num(bytes!, "n");
    }
    const markedArtifacts = artifactIds.length
      ? (
          await all(
            tx,
            `UPDATE builds SET artifacts_deleted_at = ? WHERE id IN (${placeholders(artifactIds.length)}) AND artifacts_deleted_at IS NULL RETURNING id`,
            [now, ...artifactIds],
          )
        ).map((r) => str(r, "id"))
      : [];
    const removed = markedArtifacts.length
      ? await all(tx, `DELETE FROM artifacts WHERE build_id IN (${placeholders(markedArtifacts.length)}) RETURNING id, build_id, size`, markedArtifacts)
      : [];
    counted.artifacts = removed.length;
    counted.artifact_bytes = removed.reduce((sum, r) => sum + num(r, "size"), 0);
    return { counted, archivedLogs, files: removed.map((r) => ({ id: str(r, "id"), build_id: str(r, "build_id") })) };
  });
  Object.assign(pass, done.counted);

  // The rows are gone: now the objects (a crash here leaves objects no row names, never the reverse).
  // A store that refuses is logged and the pass goes on; its objects are then only unreferenced.
  for (const f of done.files) {
    await ctx.objects.delete(artifactKey(f.build_id, f.id)).catch((error: unknown) => {
      ctx.log.warn("retention could not delete an artifact object", { build_id: f.build_id, artifact_id: f.id, error });
    });
  }
  for (const buildId of done.archivedLogs) {
    await ctx.objects.delete(logArchiveKey(buildId)).catch((error: unknown) => {
      ctx.log.warn("retention could not delete an archived log", { build_id: buildId, error });
    });
  }
  await reclaimFreePages(ctx);

  const counters = retentionCounters(ctx.metrics);
  counters.deleted.inc({ kind: "logs" }, pass.logs);
  counters.deleted.inc({ kind: "artifacts" }, pass.artifacts);
  counters.bytes.inc({ kind: "logs" }, pass.log_bytes);
  counters.bytes.inc({ kind: "artifacts" }, pass.artifact_bytes);
  ctx.log.info("retention pass", { ...pass });
  return pass;
}

/** Per database: whether it was made with auto_vacuum = INCREMENTAL (2); fixed for the file's life. */
const incremental = new WeakMap<object, Promise<boolean>>();

/**
 * Gives the pages the pass freed back to the file system. Only a database created with
 * auto_vacuum = INCREMENTAL can (docs/operations.md "Retention" says how to convert an older one);
 * elsewhere SQLite reuses the free pages for new rows, so the file stops growing instead.
 */
async function reclaimFreePages(ctx: Pick<AppContext, "db" | "log">): Promise<void> {
  // Each step of incremental_vacuum frees one page, and @libsql/client steps a statement once and
  // leaves it in progress, which then blocks the commit; a remote libSQL server keeps its own file.
  if (ctx.db.driver !== "bun:sqlite") return;
  let known = incremental.get(ctx.db);
  if (!known) {
    known = one(ctx.db, "PRAGMA auto_vacuum")
      .then((r) => r !== null && num(r, "auto_vacuum") === 2)
      .catch(() => false);
    incremental.set(ctx.db, known);
  }
  if (!(await known)) return;
  try {
    await inTransaction(ctx.db, (tx) => tx.execute("PRAGMA incremental_vacuum"));
  } catch (error) {
    ctx.log.warn("incremental_vacuum failed", { error });
  }
}

/** Bytes under the data directory: the files at its top (the database and its WAL) and every stored artifact. */
export async function dataDirBytes(db: Executor, dataDir: string, artifactsOnDisk = true): Promise<number> {
  let bytes = 0;
  for (const entry of await readdir(dataDir, { withFileTypes: true }).catch(() => [])) {
    if (entry.isFile()) bytes += (await stat(join(dataDir, entry.name)).catch(() => ({ size: 0 }))).size;
  }
  if (!artifactsOnDisk) return bytes;
  const artifacts = await one(db, "SELECT COALESCE(SUM(size), 0) AS n FROM artifacts");
  return bytes + num(artifacts!, "n");
}

export const RETENTION_OFF_REASON = "retention_off";

/**
 * Warns before the disk fills: when the data directory holds more than ROOST_DATA_DIR_WARN_BYTES
 * while some project keeps everything (retention off), an operator incident says so; it resolves
 * itself once retention is on everywhere or the directory is smaller again. Also sets the
 * roost_data_dir_bytes gauge.
 */
export async function checkDataDirGrowth(
  ctx: Pick<AppContext, "db" | "clock" | "config" | "metrics">,
): Promise<{ bytes: number; projects_keeping_everything: number }> {
  const now = ctx.clock.now();
  const bytes = await dataDirBytes(ctx.db, ctx.config.dataDir, ctx.config.objectStore.kind === "disk");
  ctx.metrics.gauge("roost_data_dir_bytes", "Bytes in the data directory: the database files and the stored artifacts.").set({}, bytes);
  const defaults = instancePolicy(ctx.config);
  const rows = await all(
    ctx.db,
    "SELECT s.log_retention_days, s.artifact_retention_days, s.keep_builds FROM projects p LEFT JOIN project_operation_settings s ON s.project_id = p.id",
  );
  const keeping = rows.filter((r) =>
    keepsEverything(
      effective(defaults, {
        log_retention_days: numOrNull(r, "log_retention_days"),
        artifact_retention_days: numOrNull(r, "artifact_retention_days"),
        keep_builds: numOrNull(r, "keep_builds"),
      }),
    ),
  ).length;
  const threshold = ctx.config.retention.warnDataDirBytes;
  if (threshold > 0 && keeping > 0 && bytes > threshold) {
    const gib = (n: number) => `${(n / 1024 ** 3).toFixed(1)} GiB`;
    await raiseIncident(ctx.db, now, {
      severity: "warning",
      reason: RETENTION_OFF_REASON,
      message: `The data directory holds ${gib(bytes)}, more than ROOST_DATA_DIR_WARN_BYTES (${gib(threshold)}), and retention is off for ${keeping} project(s): their builds' logs and artifacts are kept forever, so the disk will fill.`,
      repair_action:
        "Set ROOST_LOG_RETENTION_DAYS, ROOST_ARTIFACT_RETENTION_DAYS or ROOST_KEEP_BUILDS, or a project's retention (its Badges and retention tab, or PUT /v1/projects/{project_id}/retention); see docs/operations.md, Retention.",
      resource_kind: "instance",
      resource_id: "data_dir",
      resource_name: ctx.config.dataDir,
    });
  } else {
    await resolveIncident(ctx.db, now, "instance", "data_dir", RETENTION_OFF_REASON);
  }
  return { bytes, projects_keeping_everything: keeping };
}
