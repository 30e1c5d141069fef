// Scheduled builds (docs/operations.md "Scheduled builds"): cron expressions with a time zone,
// parsed by croner (https://croner.56k.guru), per pipeline and branch.
//
// Firing works from the database so several daemon processes can tick side by side:
//   - a schedule is due when next_slot_at <= now; the slot built is the latest one at or before
//     now, so after downtime the missed slots are built once, not once each;
//   - the slot is claimed by inserting (schedule_id, slot_at) into schedule_runs in the same write
//     transaction as the build: of two processes firing the same slot, the primary key lets one
//     insert and the other's transaction builds nothing;
//   - the branch head is asked of the source host before the transaction, and a schedule set not
//     to build unchanged code records the slot as `unchanged` when the head is the commit its
//     last scheduled build used.
import { Cron } from "croner";
import type { Executor } from "../db/client.ts";
import type { InValue } from "../db/database.ts";
import { all, bool, inTransaction, num, one, rowMapper, str, strAs, strOrNull } from "../db/client.ts";
import type { AppContext } from "../http/context.ts";
import { newId } from "../auth/secrets.ts";
import { createBuildInTransaction, publishCreated } from "../builds/create.ts";
import { findPipeline } from "../pipelines/store.ts";
import { findProject } from "../projects/store.ts";
import { findRepository } from "../integrations/repositories.ts";
import { findIntegration } from "../integrations/store.ts";
import { forgeOf } from "../forges/registry.ts";
import { definitionAt, type BuildDefinition } from "../pipelines/source.ts";
import { dueScheduleRows } from "./due.ts";
import type { Pipeline } from "../pipelines/store.ts";
import type { ScheduleResource } from "./wire.ts";
import type { WireOf } from "../schemas/shared.ts";

/** One schedule (table schedules). */
const toSchedule = rowMapper({
  id: str,
  project_id: str,
  pipeline_id: str,
  cron: str,
  timezone: str,
  branch: str,
  build_when_unchanged: bool,
  enabled: bool,
  next_slot_at: num,
  last_built_sha: strOrNull,
  /** 'file': synced from the pipeline file on the default branch, read-only through the API. */
  source: (row, column): "api" | "file" => (str(row, column) === "file" ? "file" : "api"),
  config_path: strOrNull,
  created_by: strOrNull,
  created_at: num,
  updated_at: num,
});
export type Schedule = ReturnType<typeof toSchedule>;

/** One firing of a schedule (table schedule_runs). */
const toRun = rowMapper({
  slot_at: num,
  result: strAs<"built" | "unchanged" | "failed">(),
  build_id: strOrNull,
  commit_sha: strOrNull,
  error: strOrNull,
  created_at: num,
});
export type ScheduleRun = ReturnType<typeof toRun>;

export { cronProblem, timezoneProblem } from "../pipelines/cron.ts";

function cronOf(expression: string, timezone: string): Cron {
  return new Cron(expression.trim(), { timezone, paused: true });
}

/** The first slot strictly after `after` (epoch seconds), or null when the expression never fires again. */
export function nextSlot(expression: string, timezone: string, after: number): number | null {
  const next = cronOf(expression, timezone).nextRun(new Date(after * 1000));
  return next ? Math.floor(next.getTime() / 1000) : null;
}

/** The latest slot at or before `now`. */
export function latestSlot(expression: string, timezone: string, now: number): number | null {
  const [previous] = cronOf(expression, timezone).previousRuns(1, new Date((now + 1) * 1000));
  return previous ? Math.floor(previous.getTime() / 1000) : null;
}

/** Stored when a schedule will never fire again (e.g. "0 0 30 2 *"). */
const NEVER = Number.MAX_SAFE_INTEGER;

export interface ScheduleFields {
  cron: string;
  timezone: string;
  branch: string;
  build_when_unchanged: boolean;
  enabled: boolean;
}

export async function insertSchedule(
  db: Executor,
  f: ScheduleFields & { projectId: string; pipelineId: string; createdBy: string | null },
  now: number,
): Promise<Schedule> {
  const row = await one(
    db,
    `INSERT INTO pipeline_schedules (id, project_id, pipeline_id, cron, timezone, branch, build_when_unchanged, enabled, next_slot_at, created_by, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    [
      newId(),
      f.projectId,
      f.pipelineId,
      f.cron.trim(),
      f.timezone,
      f.branch,
      f.build_when_unchanged ? 1 : 0,
      f.enabled ? 1 : 0,
      nextSlot(f.cron, f.timezone, now) ?? NEVER,
      f.createdBy,
      now,
      now,
    ],
  );
  return toSchedule(row!);
}

/** Applies changed fields; a new expression or time zone starts counting from now (no slot in the past fires). */
export async function updateSchedule(db: Executor, current: Schedule, changes: Partial<ScheduleFields>, now: number): Promise<Schedule> {
  const next = { ...current, ...changes };
  const timingChanged = next.cron !== current.cron || next.timezone !== current.timezone || (next.enabled && !current.enabled);
  const nextSlotAt = timingChanged ? (nextSlot(next.cron, next.timezone, now) ?? NEVER) : current.next_slot_at;
  const row = await one(
    db,
    `UPDATE pipeline_schedules SET cron = ?, timezone = ?, branch = ?, build_when_unchanged = ?, enabled = ?, next_slot_at = ?, updated_at = ? WHERE id = ? RETURNING *`,
    [next.cron.trim(), next.timezone, next.branch, next.build_when_unchanged ? 1 : 0, next.enabled ? 1 : 0, nextSlotAt, now, current.id],
  );
  return toSchedule(row!);
}

export async function findSchedule(db: Executor, id: string): Promise<Schedule | null> {
  const row = await one(db, "SELECT * FROM pipeline_schedules WHERE id = ?", [id]);
  return row ? toSchedule(row) : null;
}

export async function listSchedules(db: Executor, pipelineId: string): Promise<Schedule[]> {
  return (await all(db, "SELECT * FROM pipeline_schedules WHERE pipeline_id = +? ORDER BY created_at, id", [pipelineId])).map(toSchedule);
}

export async function deleteSchedule(db: Executor, id: string): Promise<void> {
  await db.execute({ sql: "DELETE FROM pipeline_schedules WHERE id = ?", args: [id] });
}

export async function lastRun(db: Executor, scheduleId: string): Promise<ScheduleRun | null> {
  const row = await one(db, "SELECT * FROM schedule_runs WHERE schedule_id = +? ORDER BY slot_at DESC LIMIT 1", [scheduleId]);
  return row ? toRun(row) : null;
}

/** The API shape. */
export function toPublicSchedule(s: Schedule, last: ScheduleRun | null): WireOf<typeof ScheduleResource> {
  return {
    id: s.id,
    pipeline_id: s.pipeline_id,
    cron: s.cron,
    timezone: s.timezone,
    branch: s.branch,
    build_when_unchanged: s.build_when_unchanged,
    enabled: s.enabled,
    source: s.source,
    config_path: s.config_path,
    next_run_at: s.enabled && s.next_slot_at !== NEVER ? s.next_slot_at : null,
    last_run: last,
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

export interface TickResult {
  built: number;
  unchanged: number;
  failed: number;
  /** Slots another process fired first. */
  skipped: number;
}

/**
 * One scheduler pass: fires every due schedule (at most `limit`) once, for its latest slot.
 * `resolveHead` asks the source host for a branch's head and `readDefinition` reads the pipeline
 * file at that head, as a manual build does (both replaceable in the bench). A file that is invalid
 * at the head fails the slot with the file's problems as the run's error, never a silent fallback.
 */
export async function runDueSchedules(
  ctx: Pick<AppContext, "db" | "clock" | "events" | "log" | "secrets" | "config">,
  limit = 50,
  resolveHead: (projectId: string, branch: string) => Promise<string> = (projectId, branch) => forgeHead(ctx, projectId, branch),
  readDefinition: (pipeline: Pipeline, sha: string, branch: string) => Promise<BuildDefinition> = (pipeline, sha, branch) =>
    fileDefinitionAt(ctx, pipeline, sha, branch),
): Promise<TickResult> {
  const now = ctx.clock.now();
  const result: TickResult = { built: 0, unchanged: 0, failed: 0, skipped: 0 };
  const due = (await dueScheduleRows(ctx.db, now, limit)).map(toSchedule);
  for (const schedule of due) {
    const slot = latestSlot(schedule.cron, schedule.timezone, now) ?? schedule.next_slot_at;
    const following = nextSlot(schedule.cron, schedule.timezone, Math.max(slot, now)) ?? NEVER;
    let sha: string | null = null;
    let error: string | null = null;
    let definition: BuildDefinition = { kind: "definition" };
    const pipeline = await findPipeline(ctx.db, schedule.pipeline_id);
    if (!pipeline) continue;
    if (!pipeline.enabled) error = "the pipeline is disabled";
    else {
      try {
        sha = await resolveHead(schedule.project_id, schedule.branch);
      } catch (e) {
        error = `could not resolve the head of ${schedule.branch}: ${(e as Error).message}`;
      }
      if (sha) {
        definition = await readDefinition(pipeline, sha, schedule.branch);
        if (definition.kind !== "definition") error = definition.message;
      }
    }
    const outcome = await inTransaction(ctx.db, async (tx) => {
      const claimed = await one(
        tx,
        `INSERT INTO schedule_runs (schedule_id, slot_at, result, created_at) VALUES (?, ?, 'failed', ?) ON CONFLICT (schedule_id, slot_at) DO NOTHING RETURNING slot_at`,
        [schedule.id, slot, now],
      );
      if (!claimed) return { kind: "skipped" as const };
      // Re-read inside the transaction: another process may have built this schedule's last slot a moment ago.
      const fresh = await one(tx, "SELECT last_built_sha FROM pipeline_schedules WHERE id = ?", [schedule.id]);
      if (!fresh) return { kind: "skipped" as const };
      await tx.execute({ sql: "UPDATE pipeline_schedules SET next_slot_at = MAX(next_slot_at, ?) WHERE id = ?", args: [following, schedule.id] });
      if (error || !sha) {
        await tx.execute({ sql: "UPDATE schedule_runs SET error = ? WHERE schedule_id = ? AND slot_at = ?", args: [error, schedule.id, slot] });
        return { kind: "failed" as const };
      }
      if (!schedule.build_when_unchanged && strOrNull(fresh, "last_built_sha") === sha) {
        await tx.execute({
          sql: "UPDATE schedule_runs SET result = 'unchanged', commit_sha = ? WHERE schedule_id = ? AND slot_at = ?",
          args: [sha, schedule.id, slot],
        });
        return { kind: "unchanged" as const };
      }
      const created = await createBuildInTransaction(tx, now, {
        ...(definition.kind === "definition" ? { configSnapshot: definition.configSnapshot, definitionSource: definition.definitionSource } : {}),
        pipelineId: schedule.pipeline_id,
        branch: schedule.branch,
        commitSha: sha,
        triggerType: "schedule",
        triggerRef: `refs/heads/${schedule.branch}`,
        triggerActor: `schedule ${schedule.cron} (${schedule.timezone})`,
        concurrencyKey: null,
        scheduleId: schedule.id,
        context: { schedule_id: schedule.id, slot_at: slot },
      });
      await tx.execute({
        sql: "UPDATE schedule_runs SET result = 'built', build_id = ?, commit_sha = ? WHERE schedule_id = ? AND slot_at = ?",
        args: [created.build.id, sha, schedule.id, slot],
      });
      await tx.execute({ sql: "UPDATE pipeline_schedules SET last_built_sha = ? WHERE id = ?", args: [sha, schedule.id] });
      return { kind: "built" as const, created };
    });
    if (outcome.kind === "built") {
      publishCreated(ctx, outcome.created);
      ctx.log.info("scheduled build created", { schedule_id: schedule.id, slot_at: slot, build_id: outcome.created.build.id });
    } else if (outcome.kind === "failed") {
      ctx.log.warn("scheduled build not created", { schedule_id: schedule.id, slot_at: slot, error });
    }
    result[outcome.kind]++;
  }
  return result;
}

async function fileDefinitionAt(
  ctx: Pick<AppContext, "db" | "secrets" | "config" | "clock">,
  pipeline: Pipeline,
  sha: string,
  branch: string,
): Promise<BuildDefinition> {
  const project = await findProject(ctx.db, pipeline.project_id);
  if (!project) return { kind: "definition" };
  return definitionAt(ctx, project, pipeline, sha, branch);
}

async function forgeHead(ctx: Pick<AppContext, "db" | "secrets" | "config" | "clock">, projectId: string, branch: string): Promise<string> {
  const project = await findProject(ctx.db, projectId);
  const repo = project ? await findRepository(ctx.db, project.repository_id) : null;
  const integration = repo ? await findIntegration(ctx.db, repo.integration_id) : null;
  if (!repo || !integration) throw new Error("the project's repository is no longer in the catalogue");
  return forgeOf(integration).branchHead(ctx, integration, repo, branch);
}

/** A schedule as a pipeline file gives it (lib/pipelines/file.ts FileSchedule, defaults applied). */
export interface FileScheduleFields {
  cron: string;
  timezone: string;
  branch?: string | undefined;
  build_when_unchanged: boolean;
}

/**
 * The project's file schedules as one value (an SQL expression): read before a write batch that
 * relies on them being in sync, and compared again under the write lock (IS the value read).
 */
export function fileSchedulesState(projectId: string): { sql: string; args: InValue[] } {
  return {
    sql: `(SELECT group_concat(state) FROM (SELECT json_array(id, pipeline_id, cron, timezone, branch, build_when_unchanged, config_path, updated_at) AS state
            FROM pipeline_schedules WHERE pipeline_id IN (SELECT id FROM pipelines WHERE project_id = +?) AND source = 'file' ORDER BY id))`,
    args: [projectId],
  };
}

/**
 * Makes a pipeline's file schedules match `wanted` (the pipeline's `schedules` in the file at
 * `configPath` on the default branch; [] when the file no longer defines the pipeline or is gone).
 * A schedule is known by its expression, time zone and branch: one still in the file keeps its id,
 * next slot and run history (a changed build_when_unchanged is updated in place); one no longer
 * there is deleted; a new one starts counting from now. Schedules created through the API are left
 * alone. Runs in the caller's transaction (the webhook delivery's). Returns what changed.
 */
export async function syncFileSchedules(
  tx: Executor,
  target: { projectId: string; pipelineId: string; configPath: string; defaultBranch: string },
  wanted: FileScheduleFields[],
  now: number,
): Promise<{ added: number; changed: number; removed: number }> {
  const keyOf = (cron: string, timezone: string, branch: string) => JSON.stringify([cron.trim(), timezone, branch]);
  const current = (
    await all(tx, "SELECT * FROM pipeline_schedules WHERE pipeline_id = +? AND source = 'file' ORDER BY created_at, id", [target.pipelineId])
  ).map(toSchedule);
  const existing = new Map(current.map((s) => [keyOf(s.cron, s.timezone, s.branch), s]));
  const counts = { added: 0, changed: 0, removed: 0 };
  for (const w of wanted) {
    const branch = w.branch ?? target.defaultBranch;
    const key = keyOf(w.cron, w.timezone, branch);
    const have = existing.get(key);
    if (have) {
      existing.delete(key);
      if (have.build_when_unchanged !== w.build_when_unchanged || have.config_path !== target.configPath) {
        await tx.execute({
          sql: "UPDATE pipeline_schedules SET build_when_unchanged = ?, config_path = ?, updated_at = ? WHERE id = ?",
          args: [w.build_when_unchanged ? 1 : 0, target.configPath, now, have.id],
        });
        counts.changed++;
      }
      continue;
    }
    await tx.execute({
      sql: `INSERT INTO pipeline_schedules (id, project_id, pipeline_id, cron, timezone, branch, build_when_unchanged, enabled, next_slot_at, source, config_path, created_by, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, 'file', ?, NULL, ?, ?)`,
      args: [
        newId(),
        target.projectId,
        target.pipelineId,
        w.cron.trim(),
        w.timezone,
        branch,
        w.build_when_unchanged ? 1 : 0,
        nextSlot(w.cron, w.timezone, now) ?? NEVER,
        target.configPath,
        now,
        now,
      ],
    });
    counts.added++;
  }
  for (const gone of existing.values()) {
    await tx.execute({ sql: "DELETE FROM pipeline_schedules WHERE id = ?", args: [gone.id] });
    counts.removed++;
  }
  return counts;
}
