// Creating a build: the one place that numbers builds, freezes the configuration and applies
// cancel_previous (docs/api.md "Builds").
import type { Db, ResultSet, Statement } from "../db/client.ts";
import { inTransaction, num, all, rowMapper, str } from "../db/client.ts";
import type { InValue, Transaction } from "../db/database.ts";
import { newId } from "../auth/secrets.ts";
import { toBuild, type Build } from "./store.ts";
import { findPipeline, snapshotOf, type Pipeline } from "../pipelines/store.ts";
import type { ConfigSnapshot } from "../pipelines/config.ts";
import { API_DEFINITION, type DefinitionSource } from "../pipelines/definition.ts";
import type { Clock } from "../http/context.ts";
import type { EventBus } from "../daemon/events.ts";
import type { Logger } from "../daemon/log.ts";
import { routeKey, routeOf } from "../runners/routing.ts";
import { afterCanceledStatements, afterStatusChanged } from "./what-follows.ts";

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
export function publishCreated(deps: Pick<BuildDeps, "events" | "log">, result: { build: CreatedBuild; canceled: Build[] }): void {
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
  // The number and the queue place are read from their counters in the insert, which moves them
  // on (schema.sql migration 44): in the same write transaction, so no gap and no duplicate, across processes too.
  const planned = { id: newId(), pipeline, input };
  const inserted = await tx.execute(insertBuild(now, planned, { sql: NEXT_BUILD_NUMBER, args: [pipeline.project_id] }, NEXT_QUEUE_PLACE, ALWAYS));
  const build = toBuild(inserted.rows[0]!);
  let canceled: Build[] = [];
  if (cancelsPrevious(input, pipeline)) {
    const older = supersededBuilds(pipeline.id, input.concurrencyKey!, { sql: "?", args: [build.build_number] });
    const rows = await all(
      tx,
      `UPDATE builds SET status = 'canceled', finished_at = ?, updated_at = ?, failure_reason = ? WHERE id IN (${older.sql}) RETURNING *`,
      [now, now, `superseded by build #${build.build_number}`, ...older.args],
    );
    canceled = rows.map(toBuild);
  }
  await afterStatusChanged(tx, canceled);
  return { build, canceled };
}

/** An SQL expression (or condition) and its arguments, to put inside another statement. */
export type SqlPart = { sql: string; args: InValue[] };
const ALWAYS: SqlPart = { sql: "1", args: [] };

/** A build to create in a write batch: its id chosen up front, its pipeline as read before the batch. */
export interface PlannedBuild {
  id: string;
  pipeline: Pipeline;
  input: CreateBuildInput;
}

/** Whether creating this build cancels older ones of its group (cancel_previous). */
export function cancelsPrevious(input: CreateBuildInput, pipeline?: Pipeline): boolean {
  const snapshot = input.configSnapshot ?? (pipeline ? snapshotOf(pipeline) : null);
  return snapshot?.concurrency.cancel_previous === true && !!input.concurrencyKey;
}

/**
 * The builds a new build of a concurrency group supersedes (cancel_previous) as a query of their
 * ids: the group's queued and running builds numbered below it (`number`, an SQL expression). One
 * range of builds_superseded (schema.sql migration 42), however many builds the pipeline's other
 * groups have queued.
 */
export function supersededBuilds(pipelineId: string, concurrencyKey: string, number: SqlPart): SqlPart {
  return {
    sql: `SELECT id FROM builds WHERE pipeline_id = ? AND concurrency_key = ? AND status IN ('queued', 'running') AND build_number < ${number.sql}`,
    args: [pipelineId, concurrencyKey, ...number.args],
  };
}

/**
 * The number the k-th build (0, 1, ...) of createBuildsStatements gets, as an SQL expression valid in
 * the same batch before those statements (the delivery that names the builds is written first).
 */
export function plannedBuildNumber(projectId: string, k: number): SqlPart {
  return { sql: `(${NEXT_BUILD_NUMBER} + ${k})`, args: [projectId] };
}
const NEXT_BUILD_NUMBER = "(SELECT next_build_number FROM projects WHERE id = ?)";
/** The queue place a new build takes (build_queue_sequence, schema.sql migration 21), moved on by its insert's trigger. */
const NEXT_QUEUE_PLACE: SqlPart = { sql: "(SELECT next FROM build_queue_sequence WHERE id = 1)", args: [] };

/**
 * New builds of one project as statements of the caller's write batch: one request to a remote
 * server, holding its write lock only while they run there. Written only if `guard` holds under
 * that lock (a condition over a row the batch wrote before them). Each build takes its number and
 * queue place from the project's counter and the queue's sequence, which its insert's triggers
 * move on (schema.sql migration 44), so the numbers are gap-free and never handed out twice,
 * across processes too; build k gets plannedBuildNumber(k). Each build's commit status is written
 * by its insert's trigger too, and a build that cancels older ones
 * (cancelsPrevious) cancels them as createBuildInTransaction does, what follows their change
 * written first, for the builds the cancel is about to take. `created` reads the builds back
 * from the answers to these statements (what CreatedBuild names of each), with the builds each
 * canceled (none if the guard failed).
 */
export function createBuildsStatements(
  now: number,
  projectId: string,
  builds: PlannedBuild[],
  guard: SqlPart,
): { statements: Statement[]; created(results: ResultSet[]): { build: CreatedBuild; canceled: Build[] }[] } {
  if (builds.length === 0) return { statements: [], created: () => [] };
  const statements: Statement[] = [];
  const at: { inserted: number; canceled: number | null }[] = [];
  for (const b of builds) {
    if (b.pipeline.project_id !== projectId) throw new Error("createBuildsStatements: a build of another project");
    const inserted = statements.push(
      insertBuild(
        now,
        b,
        { sql: NEXT_BUILD_NUMBER, args: [projectId] },
        NEXT_QUEUE_PLACE,
        guard,
        // Only what the delivery's answer and the build.queued event need: the whole row is about 25
        // columns, its configuration among them, encoded by a remote server and decoded here.
        "id, project_id, pipeline_id, build_number",
      ),
    );
    let canceled: number | null = null;
    if (cancelsPrevious(b.input, b.pipeline)) {
      // The new build's number, or NULL (nothing canceled) when it was not written.
      const number = "(SELECT build_number FROM builds WHERE id = ?)";
      const older = supersededBuilds(b.pipeline.id, b.input.concurrencyKey!, { sql: number, args: [b.id] });
      statements.push(...afterCanceledStatements(older, now));
      canceled = statements.push({
        sql: `UPDATE builds SET status = 'canceled', finished_at = ?, updated_at = ?, failure_reason = 'superseded by build #' || ${number}
              WHERE id IN (${older.sql}) RETURNING *`,
        args: [now, now, b.id, ...older.args],
      });
    }
    at.push({ inserted: inserted - 1, canceled: canceled === null ? null : canceled - 1 });
  }
  return {
    statements,
    created: (results) =>
      at.flatMap(({ inserted, canceled }) =>
        (results[inserted]?.rows ?? []).map((row) => ({
          build: toCreatedBuild(row),
          canceled: canceled === null ? [] : (results[canceled]?.rows ?? []).map(toBuild),
        })),
      ),
  };
}

/** What a write batch's new build answers with (createBuildsStatements): what the delivery's answer and the build.queued event need. */
export type CreatedBuild = Pick<Build, "id" | "project_id" | "pipeline_id" | "build_number">;
const toCreatedBuild = rowMapper({ id: str, project_id: str, pipeline_id: str, build_number: num });

/** The INSERT of one queued build, RETURNING it; its number and queue place are SQL expressions, and it is written only if `guard` holds. */
function insertBuild(now: number, b: PlannedBuild, buildNumber: SqlPart, queueSeq: SqlPart, guard: SqlPart, returning = "*"): Statement {
  const v = buildValues(now, b);
  return {
    sql: `INSERT INTO builds (id, project_id, pipeline_id, build_number, source_build_id, branch, commit_sha, changelog, config_snapshot, context,
       status, concurrency_key, trigger_type, trigger_event, trigger_ref, trigger_actor, created_by, queued_at, created_at, updated_at, schedule_id, definition_source,
       queue_seq, runner_route, own_max_concurrent)
     SELECT ?, ?, ?, ${buildNumber.sql}, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${queueSeq.sql}, ?, ? WHERE ${guard.sql} RETURNING ${returning}`,
    args: [...v.slice(0, 3), ...buildNumber.args, ...v.slice(3, 20), ...queueSeq.args, ...v.slice(20), ...guard.args],
  };
}

/**
 * A queued build's values but its number and queue place, in the order of BUILD_VALUE_COLUMNS:
 * its place in the queue, and what the claim reads of it (schema.sql migration 21), are its route
 * and, when its pipeline file set one, its own max_concurrent.
 */
function buildValues(now: number, b: PlannedBuild): InValue[] {
  const { pipeline, input } = b;
  const snapshot = input.configSnapshot ?? snapshotOf(pipeline);
  const definitionSource = input.definitionSource ?? API_DEFINITION;
  return [
    b.id,
    pipeline.project_id,
    pipeline.id,
    input.sourceBuildId ?? null,
    input.branch,
    input.commitSha,
    input.changelog ?? "",
    snapshotText(snapshot),
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
    routeKey(routeOf(snapshot)),
    definitionSource.source === "file" ? snapshot.concurrency.max_concurrent : 0,
  ];
}
/** Where buildValues puts the config snapshot's text. */
const SNAPSHOT = 7;

/**
 * A snapshot's JSON text, made once per snapshot object: a webhook push's builds take their
 * pipeline's snapshot as this daemon last read it (lib/webhooks/what-triggers.ts), the same object
 * push after push, and its text (about a kilobyte) was made afresh for each build, twice (its own
 * batch's statement and the merged one). A snapshot is not changed once made.
 */
const snapshotTexts = new WeakMap<ConfigSnapshot, string>();
function snapshotText(snapshot: ConfigSnapshot): string {
  let text = snapshotTexts.get(snapshot);
  if (text === undefined) snapshotTexts.set(snapshot, (text = JSON.stringify(snapshot)));
  return text;
}

const BUILD_VALUE_COLUMNS =
  "id, project_id, pipeline_id, source_build_id, branch, commit_sha, changelog, config_snapshot, context, concurrency_key, trigger_type, trigger_event, trigger_ref, trigger_actor, created_by, queued_at, created_at, updated_at, schedule_id, definition_source, runner_route, own_max_concurrent";

/** A build of mergedBuildsStatement: the delivery that names it, the index of its decision there, and when it was created. */
export interface MergedBuild {
  build: PlannedBuild;
  deliveryId: string;
  decision: number;
  now: number;
}

/**
 * The builds of several webhook deliveries' write batches, merged by the write queue into one
 * statement (lib/webhooks/merged-writes.ts), after the statement that wrote the deliveries: each
 * build is written only if its delivery was (and not as a duplicate), numbered as its decision
 * there says (the project's counter plus the build's place among the merged builds of its project),
 * and queued in order from the queue's sequence as it was before the first (a MATERIALIZED CTE is
 * read once, before the inserts' triggers move the sequence). RETURNING as createBuildsStatements.
 * Builds that cancel older ones (cancelsPrevious) are not merged.
 */
export function mergedBuildsStatement(builds: MergedBuild[]): Statement {
  // The builds of one pipeline share its snapshot: each distinct text is sent once, and each build
  // names its place in that list, instead of every build carrying its own copy escaped inside the
  // rows' JSON (a kilobyte a build, encoded here and parsed again by SQLite).
  const snapshots = new Map<InValue, number>();
  const rows = builds.map(({ build, deliveryId, decision, now }, k) => {
    const values = buildValues(now, build);
    const text = values[SNAPSHOT]!;
    let place = snapshots.get(text);
    if (place === undefined) snapshots.set(text, (place = snapshots.size));
    values[SNAPSHOT] = place;
    return [...values, deliveryId, decision, k];
  });
  const n = BUILD_VALUE_COLUMNS.split(", ").length;
  const v = (i: number) => `(b.value->>${i})`;
  const column = (i: number) => (i === SNAPSHOT ? `(s.texts->>${v(i)})` : v(i));
  return {
    sql: `WITH q AS MATERIALIZED (SELECT next FROM build_queue_sequence WHERE id = 1), s(texts) AS (SELECT ?)
     INSERT INTO builds (${BUILD_VALUE_COLUMNS}, build_number, status, queue_seq)
     SELECT ${Array.from({ length: n }, (_, i) => column(i)).join(", ")}, json_extract(w.decisions, '$[' || ${v(n + 1)} || '].build_number'), 'queued', q.next + ${v(n + 2)}
     FROM json_each(?) b JOIN webhook_deliveries w ON w.id = ${v(n)} AND w.duplicate_of IS NULL JOIN q JOIN s
     RETURNING id, project_id, pipeline_id, build_number`,
    args: [JSON.stringify([...snapshots.keys()]), JSON.stringify(rows)],
  };
}
