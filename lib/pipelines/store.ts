// Pipelines (docs/api.md "Pipelines"): trigger, concurrency and execution configuration of a project.
import type { Executor, Row, Value } from "../db/client.ts";
import type { InValue } from "../db/database.ts";
import { all, bool, json, num, one, readInPieces, rowMapper, str } from "../db/client.ts";
import { newId } from "../auth/secrets.ts";
import type { Concurrency, ConfigSnapshot, ExecutionConfig, TriggerConfig } from "./config.ts";
import { normalizeExecutionConfig, publicEnv } from "./snapshot.ts";
import type { PipelineResource } from "./wire.ts";
import type { WireOf } from "../schemas/shared.ts";

/** One pipeline (table pipelines); its concurrency is two columns, its trigger and execution settings JSON. */
const toPipeline = rowMapper({
  id: str,
  project_id: str,
  name: str,
  enabled: bool,
  config_path: str,
  config_path_explicit: bool,
  concurrency: (row): Concurrency => ({ cancel_previous: bool(row, "cancel_previous"), max_concurrent: num(row, "max_concurrent") }),
  trigger_config: json<TriggerConfig>(),
  execution_config: (row, column) => normalizeExecutionConfig(JSON.parse(str(row, column)) as ExecutionConfig),
  created_at: num,
  updated_at: num,
});
export type Pipeline = ReturnType<typeof toPipeline>;

/** The API shape: secret env values are never returned. */
export function toPublicPipeline(p: Pipeline): WireOf<typeof PipelineResource> {
  return { ...p, execution_config: { ...p.execution_config, env: publicEnv(p.execution_config.env) } };
}

export function snapshotOf(p: Pipeline): ConfigSnapshot {
  return {
    pipeline_name: p.name,
    config_path: p.config_path,
    concurrency: p.concurrency,
    trigger_config: p.trigger_config,
    execution_config: p.execution_config,
  };
}

export type PipelineFields = Omit<Pipeline, "id" | "project_id" | "created_at" | "updated_at">;

/** The stored values of a pipeline's fields, in the column order insertPipeline and replacePipeline name them. */
function fieldValues(f: PipelineFields): Value[] {
  return [
    f.name,
    f.enabled ? 1 : 0,
    f.config_path,
    f.config_path_explicit ? 1 : 0,
    f.concurrency.cancel_previous ? 1 : 0,
    f.concurrency.max_concurrent,
    JSON.stringify(f.trigger_config),
    JSON.stringify(f.execution_config),
  ];
}

export async function insertPipeline(db: Executor, projectId: string, f: PipelineFields, now: number): Promise<Pipeline> {
  const row = await one(
    db,
    `INSERT INTO pipelines (id, project_id, name, enabled, config_path, config_path_explicit, cancel_previous, max_concurrent, trigger_config, execution_config, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    [newId(), projectId, ...fieldValues(f), now, now],
  );
  return toPipeline(row!);
}

export async function replacePipeline(db: Executor, id: string, f: PipelineFields, now: number): Promise<Pipeline | null> {
  const row = await one(
    db,
    `UPDATE pipelines SET name = ?, enabled = ?, config_path = ?, config_path_explicit = ?, cancel_previous = ?, max_concurrent = ?,
       trigger_config = ?, execution_config = ?, updated_at = ? WHERE id = ? RETURNING *`,
    [...fieldValues(f), now, id],
  );
  return row ? toPipeline(row) : null;
}

export async function findPipeline(db: Executor, id: string): Promise<Pipeline | null> {
  const row = await one(db, "SELECT * FROM pipelines WHERE id = ?", [id]);
  return row ? toPipeline(row) : null;
}

/**
 * A project's pipelines by name. A pipeline's configuration may be up to the 1 MiB a request
 * carries (50 commands of 4,096 characters a step), so a project's can pass what a libSQL server
 * answers at once (10 MB): then they are read in smaller requests, each after the last read.
 */
export async function listPipelines(db: Executor, projectId: string): Promise<Pipeline[]> {
  return (await pipelinesInPieces(db, "project_id = +?", [projectId])).map(toPipeline);
}

function pipelinesInPieces(db: Executor, scope: string, args: InValue[]): Promise<Row[]> {
  return readInPieces(Infinity, (count, last: Row | undefined) =>
    all(db, `SELECT * FROM pipelines WHERE ${scope} ${last ? "AND (name > ? OR (name = +? AND id > ?))" : ""} ORDER BY name, id LIMIT +?`, [
      ...args,
      ...(last ? [str(last, "name"), str(last, "name"), str(last, "id")] : []),
      count,
    ]),
  );
}

/**
 * The state of the pipelines of the project that builds a repository, as one value (an SQL
 * expression): read before a write batch planned from them and compared again under its write
 * lock (`IS` the value read), so that any change meanwhile, even within the same second, makes the
 * batch write nothing. The project's count of its pipelines' changes, which triggers move in each
 * change's own statement (schema.sql migration 42): one lookup, however many pipelines and however
 * large their configuration.
 */
export function pipelinesState(repositoryId: string): { sql: string; args: InValue[] } {
  return { sql: "(SELECT pipelines_version FROM projects WHERE repository_id = ? AND unlinked_at IS NULL)", args: [repositoryId] };
}

/** The pipelines of the project that builds a repository, as listPipelines orders them (none when no project builds it). */
export async function listPipelinesOfRepository(db: Executor, repositoryId: string): Promise<Pipeline[]> {
  const rows = await pipelinesInPieces(db, "project_id = (SELECT id FROM projects WHERE repository_id = +? AND unlinked_at IS NULL)", [repositoryId]);
  return rows.map(toPipeline);
}

export async function deletePipeline(db: Executor, id: string): Promise<void> {
  await db.execute({ sql: "DELETE FROM pipelines WHERE id = ?", args: [id] });
}

/** A project's pipelines by name, for the lists that show only id and name (badges). */
export async function pipelineNames(db: Executor, projectId: string): Promise<{ id: string; name: string }[]> {
  const rows = await all(db, "SELECT id, name FROM pipelines WHERE project_id = +? ORDER BY name", [projectId]);
  return rows.map((r) => ({ id: str(r, "id"), name: str(r, "name") }));
}
