// The write batches of webhook pushes waiting together, merged: one statement writes the
// deliveries of all of them, one their builds, where each push's batch is two statements of its
// own (lib/webhooks/accept.ts). A libSQL server prepares every statement afresh, and a push's two
// guarded statements cost sqld far more to prepare and parse than their rows cost to write
// (docs/benchmarks.md, "Webhook pushes on sqld: merged batches"); the write queue merges the
// batches of one kind next to each other in a group (lib/db/write-queue.ts, MergeKind).
//
// The merged statements write every push or none: the deliveries' statement holds only if every
// push's guards hold (the catalogue, the project and pipelines as read: the same conditions each
// batch carries, each distinct one once) and no push's dedupe key is held. Otherwise it writes
// nothing, and each push's batch runs again as given, first in line: the one whose guard moved or
// whose key is held then acts as it does alone (read again, or recorded as a duplicate). Pushes
// that share a dedupe key (a redelivery arriving with the original) are not merged. Each build is
// numbered as its delivery's decision says: the project's counter plus its place among the merged
// builds of its project (lib/builds/create.ts mergedBuildsStatement).
import type { InValue, MergeKind, NormalizedStatement, ResultSet, SqlCondition } from "../db/database.ts";
import { mergedBuildsStatement, type MergedBuild, type PlannedBuild } from "../builds/create.ts";
import { deliveryValues, type NewDelivery } from "./deliveries.ts";
import { CONTENT_KEY_WINDOW_SECONDS } from "./dedupe-keys.ts";

/** A push's write batch as its parts (acceptInOneBatch's statements say the same). */
export interface PushWrite {
  /** The delivery's record, its planned builds' decisions numbered 0 (what-triggers.ts). */
  record: NewDelivery & { dedupeKeys: string[] };
  /** Its content digest (the only key a newer delivery may take over, past its window), if any. */
  contentKey: string | null;
  /** What the batch is guarded by (allOf of its guards), or undefined when it is not. */
  guard: SqlCondition | undefined;
  /** Its builds, of the delivery's project; none cancels older ones (cancelsPrevious). */
  builds: PlannedBuild[];
}

/** The delivery's columns, as deliveryValues gives them (duplicate_of, always NULL here, apart). */
const COLUMNS = [
  "id",
  "host",
  "delivery_id",
  "event",
  "action",
  "verified",
  "result",
  "reason",
  "repository_external_id",
  "repository_full_name",
  "repository_id",
  "project_id",
  "commit_sha",
  "decisions",
  "duplicate_of",
  "body",
  "body_pieces",
  "received_at",
  "body_expires_at",
  "dedupe_keys",
];
const DECISIONS = COLUMNS.indexOf("decisions");
const PROJECT = COLUMNS.indexOf("project_id");

/**
 * A planned build's decision gets its number here: the project's counter as the statement reads
 * it, plus the place the decision carries (its build_number) among the merged builds of its project.
 */
const NUMBERED = `(SELECT json_group_array(json(CASE WHEN e.value->>'build_id' IS NULL THEN e.value
    ELSE json_set(e.value, '$.build_number', p.next_build_number + (e.value->>'build_number'),
      '$.reason', (e.value->>'reason') || ': build #' || (p.next_build_number + (e.value->>'build_number'))) END))
  FROM json_each(d.value->>${DECISIONS}) e LEFT JOIN projects p ON p.id = d.value->>${PROJECT})`;

/**
 * What tells two guards apart: their text and arguments. A replacer (for a bigint argument, which
 * JSON cannot hold) has JSON.stringify call back into JavaScript for every value, so it is used
 * only where there is one.
 */
function guardKey(guard: SqlCondition): string {
  const args = Array.isArray(guard.args) ? guard.args : Object.values(guard.args);
  return args.some((a) => typeof a === "bigint")
    ? JSON.stringify([guard.sql, guard.args], (_, v) => (typeof v === "bigint" ? `${v}n` : v))
    : JSON.stringify([guard.sql, guard.args]);
}

export const mergedPushes: MergeKind<PushWrite> = {
  merge(items) {
    const keys = new Set<string>();
    const held: [string, string | null, number][] = [];
    const guards = new Map<string, SqlCondition>();
    const rows: InValue[][] = [];
    const builds: MergedBuild[] = [];
    /** Builds of each project so far: the place of the next one. */
    const places = new Map<string, number>();
    for (const { record, contentKey, guard, builds: planned } of items) {
      for (const key of record.dedupeKeys) {
        if (keys.has(key)) return null;
        keys.add(key);
        held.push([key, contentKey, record.received_at - CONTENT_KEY_WINDOW_SECONDS]);
      }
      if (guard) guards.set(guardKey(guard), guard);
      const decisions = record.decisions.map((d) => ({ ...d }));
      if (decisions.filter((d) => d.build_id !== undefined).length !== planned.length) return null;
      for (const build of planned) {
        const decision = decisions.findIndex((d) => d.build_id === build.id);
        if (decision < 0 || build.pipeline.project_id !== record.project_id) return null;
        const place = places.get(build.pipeline.project_id) ?? 0;
        places.set(build.pipeline.project_id, place + 1);
        decisions[decision]!.build_number = place;
        builds.push({ build, deliveryId: record.id, decision, now: record.received_at });
      }
      const values = deliveryValues(record);
      values[DECISIONS] = JSON.stringify(decisions);
      rows.push(values);
    }
    const v = (i: number) => `d.value->>${i}`;
    const select = COLUMNS.map((c, i) => (c === "decisions" ? NUMBERED : c === "duplicate_of" ? "NULL" : v(i)));
    const conditions = [...guards.values()];
    const deliveries: NormalizedStatement = {
      sql: `INSERT INTO webhook_deliveries (${COLUMNS.join(", ")})
        SELECT ${select.join(", ")} FROM json_each(?) d
        WHERE ${conditions.map((c) => `(${c.sql}) AND `).join("")}NOT EXISTS (SELECT 1 FROM json_each(?) k JOIN webhook_dedupe_keys h ON h.key = k.value->>0
          WHERE NOT (h.key IS k.value->>1 AND h.created_at <= k.value->>2))
        RETURNING id`,
      args: [JSON.stringify(rows), ...conditions.flatMap((c) => c.args), JSON.stringify(held)],
    };
    const statements = [deliveries];
    if (builds.length) statements.push(mergedBuildsStatement(builds) as NormalizedStatement);
    return {
      statements,
      split(results) {
        // All of them or none (the conditions read only what the statement does not write); each as
        // its own batch answers: its delivery written (not a duplicate), and its builds.
        const written = new Set(results[0]!.rows.map((row) => row.id));
        if (written.size === 0) return null;
        const byId = new Map((results[1]?.rows ?? []).map((row) => [row.id, row]));
        return items.map(({ record, builds: planned }): ResultSet[] => [
          written.has(record.id)
            ? { columns: ["duplicate_of"], rows: [{ duplicate_of: null }], rowsAffected: 1, lastInsertRowid: undefined }
            : { columns: ["duplicate_of"], rows: [], rowsAffected: 0, lastInsertRowid: undefined },
          ...planned.map((b) => {
            const row = byId.get(b.id);
            return { columns: results[1]!.columns, rows: row ? [row] : [], rowsAffected: row ? 1 : 0, lastInsertRowid: undefined };
          }),
        ]);
      },
    };
  },
};
