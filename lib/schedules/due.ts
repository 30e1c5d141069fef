// Which schedules have a slot to build: runDueSchedules' query (lib/schedules/schedules.ts), in a
// file of its own so the background task can ask it without importing what building a slot needs
// (croner, the pipeline file's reader and its YAML parser, build creation) before a slot is due
// (docs/benchmarks.md, "idle RSS").
import type { Executor, Row } from "../db/client.ts";
import { all } from "../db/client.ts";

/** Enabled schedules whose next slot is at or before `now`, the earliest first, at most `limit`. */
export function dueScheduleRows(db: Executor, now: number, limit: number): Promise<Row[]> {
  return all(db, "SELECT * FROM pipeline_schedules WHERE enabled = 1 AND next_slot_at <= ? ORDER BY next_slot_at LIMIT +?", [now, limit]);
}
