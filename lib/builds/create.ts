// Creating a build: the one place that numbers builds, freezes the configuration and applies
// cancel_previous (docs/api.md "Builds").
import type { Db } from "../db/client.ts";
import { inTransaction, one, all } from "../db/client.ts";
import type { Transaction } from "../db/database.ts";
import { newId } from "../auth/secrets.ts";
import { toBuild, type Build } from "./store.ts";
import { findPipeline, snapshotOf } from "../pipelines/store.ts";
import { takeBuildNumber } from "../projects/store.ts";
import type { ConfigSnapshot } from "../pipelines/config.ts";
import { API_DEFINITION, type DefinitionSource } from "../pipelines/definition.ts";
import type { Clock } from "../http/context.ts";
import type { EventBus } from "../daemon/events.ts";
import type { Logger } from "../daemon/log.ts";
import { routeKey, routeOf } from "../runners/routing.ts";
import { afterBuildCreated, afterStatusChanged } from "./what-follows.ts";

export interface CreateBuildInput {
  pipelineId: string;
  branch: string;
  commitSha: string;
  changelog?: string;
  triggerType: "manual" | "rerun" | "webhook" | "schedule";
  /** The schedule that started the build (triggerType "schedule"). */
  scheduleId?: string | null;
  triggerEvent?: string;
  triggerRef?: string;
  triggerActor?: string;
  /**
   * cancel_previous groups by this key ("branch:<name>" for pushes, "pr:<number>" for pull
   * requests). Null for tags, manual builds and re-runs: they never cancel and are never canceled.
   */
  concurrencyKey?: string | null;
  sourceBuildId?: string | null;
  /** A re-run passes its source's snapshot; otherwise the pipeline's current configuration is frozen. */
  configSnapshot?: ConfigSnapshot;
  /** Where configSnapshot comes from (the pipeline file at a commit); default: the API. */
  definitionSource?: DefinitionSource;
  createdBy?: string | null;
  context?: unknown;
}

export interface BuildDeps {
  db: Db;
  clock: Clock;
  events: EventBus;
  log?: Logger;
}

export class PipelineNotFoundError extends Error {}

export async function createBuild(deps: BuildDeps, input: CreateBuildInput): Promise<{ build: Build; canceled: Build[] }> {
  const result = await inTransaction(deps.db, (tx) => createBuildInTransaction(tx, deps.clock.now(), input));
  publishCreated(deps, result);
  return result;
}

/** After the transaction that created builds commits: wake runners and streams. */
export function publishCreated(deps: Pick<BuildDeps, "events" | "log">, result: { build: Build; canceled: Build[] }): void {
  deps.events.publish({ type: "build.queued", build_id: result.build.id, project_id: result.build.project_id });
  for (const c of result.canceled) deps.events.publish({ type: "build.changed", build_id: c.id, project_id: c.project_id, status: c.status });
  if (result.canceled.length) deps.log?.info("builds superseded", { by: result.build.id, canceled: result.canceled.map((c) => c.id) });
}

/**
 * Creates a build inside the caller's write transaction (a webhook delivery records itself and
 * its builds atomically). The caller publishes with publishCreated after commit.
 */
export async function createBuildInTransaction(tx: Transaction, now: number, input: CreateBuildInput): Promise<{ build: Build; canceled: Build[] }> {
  const pipeline = await findPipeline(tx, input.pipelineId);
  if (!pipeline) throw new PipelineNotFoundError(input.pipelineId);
  // The number is taken in the same write transaction as the insert: no gap, no duplicate, across processes too.
  const buildNumber = (await takeBuildNumber(tx, pipeline.project_id))!;
  const id = newId();
  const snapshot = input.configSnapshot ?? snapshotOf(pipeline);
  const definitionSource = input.definitionSource ?? API_DEFINITION;
  // Its place in the queue, and what the claim reads of it (schema.sql migration 21): its route and,
  // when its pipeline file set one, its own max_concurrent.
  const queued = await one(tx, "UPDATE build_queue_sequence SET next = next + 1 WHERE id = 1 RETURNING next - 1 AS seq");
  const ownMaxConcurrent = definitionSource.source === "file" ? snapshot.concurrency.max_concurrent : 0;
  const row = await one(
    tx,
    `INSERT INTO builds (id, project_id, pipeline_id, build_number, source_build_id, branch, commit_sha, changelog, config_snapshot, context,
       status, concurrency_key, trigger_type, trigger_event, trigger_ref, trigger_actor, created_by, queued_at, created_at, updated_at, schedule_id, definition_source,
       queue_seq, runner_route, own_max_concurrent)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    [
      id,
      pipeline.project_id,
      pipeline.id,
      buildNumber,
      input.sourceBuildId ?? null,
      input.branch,
      input.commitSha,
      input.changelog ?? "",
      JSON.stringify(snapshot),
      input.context === undefined ? null : JSON.stringify(input.context),
      input.concurrencyKey ?? null,
      // A scheduled build is stored as a manual one with trigger_event "schedule" (schema.sql migration 9).
      input.triggerType === "schedule" ? "manual" : input.triggerType,
      input.triggerType === "schedule" ? "schedule" : (input.triggerEvent ?? ""),
      input.triggerRef ?? "",
      input.triggerActor ?? "",
      input.createdBy ?? null,
      now,
      now,
      now,
      input.scheduleId ?? null,
      JSON.stringify(definitionSource),
      Number(queued!.seq),
      routeKey(routeOf(snapshot)),
      ownMaxConcurrent,
    ],
  );
  const build = toBuild(row!);
  let canceled: Build[] = [];
  if (snapshot.concurrency.cancel_previous && input.concurrencyKey) {
    const rows = await all(
      tx,
      `UPDATE builds SET status = 'canceled', finished_at = ?, updated_at = ?, failure_reason = ?
       WHERE pipeline_id = ? AND concurrency_key = ? AND status IN ('queued', 'running') AND build_number < ? RETURNING *`,
      [now, now, `superseded by build #${buildNumber}`, pipeline.id, input.concurrencyKey, buildNumber],
    );
    canceled = rows.map(toBuild);
  }
  await afterBuildCreated(tx, build);
  await afterStatusChanged(tx, canceled);
  return { build, canceled };
}
