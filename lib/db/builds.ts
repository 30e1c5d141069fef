// Builds (docs/api.md "Builds"). Status changes go only through lib/builds/transition.ts.
import type { Row } from "./database.ts";
import type { Executor } from "./client.ts";
import { all, num, numOrNull, one, str, strOrNull } from "./client.ts";
import type { BuildStatus } from "../builds/state-machine.ts";
import type { FlutterSdkUsed } from "../runner-protocol/wire.ts";
import { publicSnapshot, type ConfigSnapshot } from "../pipelines/config.ts";
import { parseDefinitionSource, type DefinitionSource } from "../pipelines/definition.ts";

export interface StepResult {
  name: string;
  status: string;
  exit_code: number | null;
  duration_ms: number;
  started_at: number;
  finished_at: number | null;
}

export interface Build {
  id: string;
  build_number: number;
  project_id: string;
  pipeline_id: string;
  runner_id: string | null;
  source_build_id: string | null;
  branch: string;
  commit_sha: string;
  changelog: string;
  config_snapshot: ConfigSnapshot;
  /** Where config_snapshot came from: the pipeline file at a commit, or the API (docs/pipelines.md). */
  definition_source: DefinitionSource;
  context: unknown;
  runner_policy_block_reason: string | null;
  status: BuildStatus;
  exit_code: number | null;
  failure_reason: string | null;
  concurrency_key: string | null;
  queued_at: number;
  started_at: number | null;
  finished_at: number | null;
  created_at: number;
  updated_at: number;
  created_by: string | null;
  trigger_type: "manual" | "rerun" | "webhook" | "schedule";
  /** The schedule that started this build (null when it was not scheduled, or the schedule is gone). */
  schedule_id: string | null;
  trigger_event: string;
  trigger_ref: string;
  trigger_actor: string;
  step_results: StepResult[];
  /** When retention deleted the build's log lines (lib/retention.ts); null while they are kept. */
  logs_deleted_at: number | null;
  /** When retention deleted the build's artifacts; null while they are kept. */
  artifacts_deleted_at: number | null;
  /** The Flutter SDK the build used, as its runner reported it; null before that (schema.sql migration 12). */
  flutter_sdk: FlutterSdkUsed | null;
}

export function toBuild(row: Row): Build {
  const context = strOrNull(row, "context");
  return {
    id: str(row, "id"),
    build_number: num(row, "build_number"),
    project_id: str(row, "project_id"),
    pipeline_id: str(row, "pipeline_id"),
    runner_id: strOrNull(row, "runner_id"),
    source_build_id: strOrNull(row, "source_build_id"),
    branch: str(row, "branch"),
    commit_sha: str(row, "commit_sha"),
    changelog: str(row, "changelog"),
    config_snapshot: JSON.parse(str(row, "config_snapshot")) as ConfigSnapshot,
    definition_source: parseDefinitionSource(row.definition_source),
    context: context === null ? null : JSON.parse(context),
    runner_policy_block_reason: strOrNull(row, "runner_policy_block_reason"),
    status: str(row, "status") as BuildStatus,
    exit_code: numOrNull(row, "exit_code"),
    failure_reason: strOrNull(row, "failure_reason"),
    concurrency_key: strOrNull(row, "concurrency_key"),
    queued_at: num(row, "queued_at"),
    started_at: numOrNull(row, "started_at"),
    finished_at: numOrNull(row, "finished_at"),
    created_at: num(row, "created_at"),
    updated_at: num(row, "updated_at"),
    created_by: strOrNull(row, "created_by"),
    // Scheduled builds are stored as manual ones with trigger_event "schedule" (schema.sql migration 9).
    trigger_type: str(row, "trigger_event") === "schedule" ? "schedule" : (str(row, "trigger_type") as Build["trigger_type"]),
    schedule_id: row.schedule_id === undefined ? null : strOrNull(row, "schedule_id"),
    trigger_event: str(row, "trigger_event"),
    trigger_ref: str(row, "trigger_ref"),
    trigger_actor: str(row, "trigger_actor"),
    step_results: JSON.parse(str(row, "step_results")) as StepResult[],
    logs_deleted_at: row.logs_deleted_at === undefined ? null : numOrNull(row, "logs_deleted_at"),
    artifacts_deleted_at: row.artifacts_deleted_at === undefined ? null : numOrNull(row, "artifacts_deleted_at"),
    flutter_sdk: typeof row.flutter_sdk === "string" ? (JSON.parse(row.flutter_sdk) as FlutterSdkUsed) : null,
  };
}

/** The API shape: secret env values in the snapshot are not returned. */
export function toPublicBuild(b: Build) {
  const { concurrency_key: _key, created_by: _by, ...rest } = b;
  return { ...rest, config_snapshot: publicSnapshot(b.config_snapshot) };
}

export async function findBuild(db: Executor, id: string): Promise<Build | null> {
  const row = await one(db, "SELECT * FROM builds WHERE id = ?", [id]);
  return row ? toBuild(row) : null;
}

export interface BuildFilter {
  projectId: string;
  pipelineId?: string | undefined;
  status?: BuildStatus | undefined;
  branch?: string | undefined;
  triggerType?: string | undefined;
  limit: number;
  offset: number;
}

/** Newest first. */
export async function listBuilds(db: Executor, f: BuildFilter): Promise<{ builds: Build[]; total: number }> {
  const where = ["project_id = ?"];
  const args: (string | number)[] = [f.projectId];
  if (f.pipelineId) (where.push("pipeline_id = ?"), args.push(f.pipelineId));
  if (f.status) (where.push("status = ?"), args.push(f.status));
  if (f.branch) (where.push("branch = ?"), args.push(f.branch));
  if (f.triggerType === "schedule") where.push("trigger_event = 'schedule'");
  else if (f.triggerType) (where.push("trigger_type = ? AND trigger_event != 'schedule'"), args.push(f.triggerType));
  const clause = `WHERE ${where.join(" AND ")}`;
  const total = await one(db, `SELECT COUNT(*) AS n FROM builds ${clause}`, args);
  const rows = await all(db, `SELECT * FROM builds ${clause} ORDER BY build_number DESC LIMIT ? OFFSET ?`, [...args, f.limit, f.offset]);
  return { builds: rows.map(toBuild), total: Number(total?.n ?? 0) };
}
