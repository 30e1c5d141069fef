// Operator incidents (docs/api.md "Operator incidents"): conditions an operator must act on, raised
// by the service, deduplicated per resource and reason while open (occurrence_count grows).
import type { Executor } from "../db/client.ts";
import { all, num, numOrNull, one, rowMapper, str, strAs } from "../db/client.ts";
import { newId } from "../auth/secrets.ts";

export type Severity = "info" | "warning" | "critical";
export type IncidentStatus = "open" | "resolved";

/** One operator incident (table incidents). */
const toIncident = rowMapper({
  id: str,
  severity: strAs<Severity>(),
  status: strAs<IncidentStatus>(),
  reason: str,
  message: str,
  repair_action: str,
  repair_url: str,
  resource_id: str,
  resource_kind: str,
  resource_name: str,
  first_occurrence_at: num,
  latest_occurrence_at: num,
  occurrence_count: num,
  read_at: numOrNull,
  resolved_at: numOrNull,
});
export type Incident = ReturnType<typeof toIncident>;

export interface IncidentInput {
  severity: Severity;
  reason: string;
  message: string;
  repair_action?: string;
  repair_url?: string;
  resource_kind: string;
  resource_id: string;
  resource_name: string;
}

/**
 * Raises an incident, or counts another occurrence of the open one for the same resource and
 * reason. A new occurrence marks it unread again, so a recurring problem is not hidden by an
 * old "read".
 */
export async function raiseIncident(db: Executor, now: number, i: IncidentInput): Promise<Incident> {
  const row = await one(
    db,
    `INSERT INTO operator_incidents (id, severity, status, reason, message, repair_action, repair_url, resource_id, resource_kind, resource_name,
       first_occurrence_at, latest_occurrence_at, occurrence_count)
     VALUES (?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
     ON CONFLICT (resource_kind, resource_id, reason) WHERE status = 'open' DO UPDATE SET
       occurrence_count = occurrence_count + 1, latest_occurrence_at = excluded.latest_occurrence_at,
       message = excluded.message, severity = excluded.severity, read_at = NULL
     RETURNING *`,
    [newId(), i.severity, i.reason, i.message, i.repair_action ?? "", i.repair_url ?? "", i.resource_id, i.resource_kind, i.resource_name, now, now],
  );
  return toIncident(row!);
}

/** The condition is gone (e.g. a sync succeeded again). */
export async function resolveIncident(db: Executor, now: number, resourceKind: string, resourceId: string, reason: string): Promise<void> {
  await db.execute({
    sql: "UPDATE operator_incidents SET status = 'resolved', resolved_at = ? WHERE resource_kind = ? AND resource_id = ? AND reason = ? AND status = 'open'",
    args: [now, resourceKind, resourceId, reason],
  });
}

/** The resources are gone (an integration removed with its catalogue): nothing is left to repair, whatever the reason. */
export async function resolveIncidentsOf(db: Executor, now: number, resourceKind: string, resourceIds: string[]): Promise<void> {
  if (resourceIds.length === 0) return;
  await db.execute({
    sql: `UPDATE operator_incidents SET status = 'resolved', resolved_at = ? WHERE resource_kind = ? AND resource_id IN (${resourceIds.map(() => "?").join(", ")}) AND status = 'open'`,
    args: [now, resourceKind, ...resourceIds],
  });
}

export async function markIncidentRead(db: Executor, id: string, now: number): Promise<Incident | null> {
  const row = await one(db, "UPDATE operator_incidents SET read_at = COALESCE(read_at, ?) WHERE id = ? RETURNING *", [now, id]);
  return row ? toIncident(row) : null;
}

export async function listIncidents(
  db: Executor,
  f: { status?: IncidentStatus | undefined; unread?: boolean | undefined; limit: number; offset: number },
): Promise<{ incidents: Incident[]; total: number }> {
  const where: string[] = [];
  const args: (string | number)[] = [];
  // The status written as its literal, not bound: `status = 'open'` is what lets SQLite read the
  // open incidents from their partial index (operator_incidents_open), which a `+?` would lose, and
  // a bare `?` beside the ORDER BY would have the statement compiled again on every call.
  if (f.status) where.push(f.status === "open" ? "status = 'open'" : "status = 'resolved'");
  if (f.unread) where.push("read_at IS NULL");
  const clause = where.length ? `WHERE ${where.join(" AND ")}` : "";
  const total = await one(db, `SELECT COUNT(*) AS n FROM operator_incidents ${clause}`, args);
  const rows = await all(db, `SELECT * FROM operator_incidents ${clause} ORDER BY latest_occurrence_at DESC, id LIMIT +? OFFSET +?`, [
    ...args,
    f.limit,
    f.offset,
  ]);
  return { incidents: rows.map(toIncident), total: Number(total?.n ?? 0) };
}
