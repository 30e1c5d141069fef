// The webhook delivery log (docs/webhooks.md "The delivery log"): every delivery, verified or not,
// what it was, and what it did for each pipeline. Bodies are kept 7 days, records 30 days.
import type { Executor, Statement } from "../db/client.ts";
import type { InValue, Row } from "../db/database.ts";
import { all, bool, json, num, numOrNull, one, rowMapper, str, strAs, strOrNull } from "../db/client.ts";
import type { PipelineDecision } from "./triggers.ts";
import { pruneBodies, readBody, type StoredBody } from "./delivery-bodies.ts";
import type { ForgeName } from "../forges/registry.ts";
import type { DeliveryResource } from "./wire.ts";
import type { WireOf } from "../schemas/shared.ts";

export const BODY_RETENTION_SECONDS = 7 * 86_400;
export const DELIVERY_RETENTION_SECONDS = 30 * 86_400;

export type DeliveryResult = "built" | "ignored" | "duplicate" | "rejected" | "failed";

/** One received delivery (table webhook_deliveries); its body only while it is kept, and not when kept in pieces (readDeliveryBody reads them). */
const toDelivery = rowMapper({
  id: str,
  host: strAs<ForgeName>(),
  delivery_id: str,
  event: str,
  action: str,
  verified: bool,
  result: strAs<DeliveryResult>(),
  reason: str,
  repository_external_id: strOrNull,
  repository_full_name: strOrNull,
  repository_id: strOrNull,
  project_id: strOrNull,
  commit_sha: strOrNull,
  decisions: json<PipelineDecision[]>(),
  duplicate_of: strOrNull,
  received_at: num,
  body: (row, column) => (numOrNull(row, "body_expires_at") !== null ? strOrNull(row, column) : null),
});
export type Delivery = ReturnType<typeof toDelivery>;

/** A delivery to record; its body as storeBody (delivery-bodies.ts) kept it. */
export type NewDelivery = Omit<Delivery, "body"> & {
  body: StoredBody;
  /**
   * The dedupe keys the delivery takes as it is written (the trigger webhook_dedupe_keys_taken,
   * schema.sql migration 44): an accepted delivery's in its write batch. None for the others.
   */
  dedupeKeys?: string[];
};

/** When a body received at `receivedAt` is no longer kept. */
export function bodyExpiry(receivedAt: number): number {
  return receivedAt + BODY_RETENTION_SECONDS;
}

export async function insertDelivery(db: Executor, d: NewDelivery): Promise<void> {
  await db.execute(insertDeliveryStatement(d));
}

/**
 * A delivery's record as a statement (for a write batch: lib/webhooks/accept.ts), written only if
 * `guard` (an SQL condition) holds. The build numbers its decisions name may be known only under
 * the write lock: `numbers` maps a decision's index to its build's number as an SQL expression,
 * which becomes the decision's build_number and ends its reason (": build #n"). `heldBy`: the
 * delivery that holds one of this one's dedupe keys, as an SQL expression (NULL when none), read
 * under the same lock: when there is one, the record is this delivery's as its duplicate instead
 * (as acceptDelivery records one), whatever `guard` says, and the statement answers duplicate_of.
 * Its one row comes from a subquery with LIMIT 1, which SQLite neither flattens nor pushes the
 * WHERE into (https://www.sqlite.org/optoverview.html#pushdown): without it, the key holder and
 * every guard's subquery were each evaluated twice (502 opcodes against 399, 3 µs of a 50 µs statement).
 */
export function insertDeliveryStatement(
  d: NewDelivery,
  guard: { sql: string; args: InValue[] } = { sql: "1", args: [] },
  numbers: ReadonlyMap<number, { sql: string; args: InValue[] }> = new Map(),
  heldBy?: { sql: string; args: InValue[] },
): Statement {
  const values = deliveryValues(d);
  const decisions = { sql: "?", args: [values[13]!] as InValue[] };
  if (numbers.size) {
    const paths: string[] = [];
    for (const [i, n] of numbers) {
      paths.push(`'$[${i}].build_number', ${n.sql}, '$[${i}].reason', ? || ${n.sql}`);
      decisions.args.push(...n.args, `${d.decisions[i]!.reason}: build #`, ...n.args);
    }
    decisions.sql = `json_set(?, ${paths.join(", ")})`;
  }
  // With heldBy: the accepted delivery's value, or the duplicate's.
  const unlessHeld = (sql: string, duplicate = "NULL") => (heldBy ? `CASE WHEN held.holder IS NULL THEN ${sql} ELSE ${duplicate} END` : sql);
  return {
    sql: `INSERT INTO webhook_deliveries (id, host, delivery_id, event, action, verified, result, reason, repository_external_id, repository_full_name,
            repository_id, project_id, commit_sha, decisions, duplicate_of, body, body_pieces, received_at, body_expires_at, dedupe_keys)
          SELECT ?, ?, ?, ?, ?, ?, ${unlessHeld("?", "'duplicate'")}, ${unlessHeld("?", "'duplicate of delivery ' || held.holder")}, ?, ?, ?, ${unlessHeld("?")}, ?,
            ${unlessHeld(decisions.sql, "'[]'")}, ${unlessHeld("?", "held.holder")}, ${unlessHeld("?")}, ${unlessHeld("?", "0")}, ?, ${unlessHeld("?")}, ${unlessHeld("?")}
          ${heldBy ? `FROM (SELECT ${heldBy.sql} AS holder LIMIT 1) held WHERE held.holder IS NOT NULL OR (${guard.sql}) RETURNING duplicate_of` : `WHERE ${guard.sql}`}`,
    args: [...values.slice(0, 13), ...decisions.args, ...values.slice(14), ...(heldBy?.args ?? []), ...guard.args],
  };
}

/** A delivery's values in the order of its columns in insertDeliveryStatement (its decisions as JSON). */
export function deliveryValues(d: NewDelivery): InValue[] {
  return [
    d.id,
    d.host,
    d.delivery_id,
    d.event,
    d.action,
    d.verified ? 1 : 0,
    d.result,
    d.reason,
    d.repository_external_id,
    d.repository_full_name,
    d.repository_id,
    d.project_id,
    d.commit_sha,
    JSON.stringify(d.decisions),
    d.duplicate_of,
    d.body.text,
    d.body.pieces,
    d.received_at,
    d.body.text === null && d.body.pieces === 0 ? null : bodyExpiry(d.received_at),
    d.dedupeKeys?.length ? JSON.stringify(d.dedupeKeys) : null,
  ];
}

/**
 * A delivery's columns but its body, which lists never show: a body is kept up to 25 MB
 * (WEBHOOK_BODY_LIMIT_BYTES), and a page of them read with the rest passed what a libSQL server
 * answers a request (10 MB, RESPONSE_TOO_LARGE) where a file answers it.
 */
const LISTED = `id, host, delivery_id, event, action, verified, result, reason, repository_external_id, repository_full_name, repository_id, project_id,
  commit_sha, decisions, duplicate_of, NULL AS body, received_at, body_expires_at`;

/**
 * One delivery without its body (`body` is null): what authorizes a request for it
 * (lib/auth/project-access.ts) reads no more than its columns, so a caller refused it does not
 * have the daemon read and decompress a body of up to 25 MB. readDeliveryBody reads the body.
 */
export async function findDelivery(db: Executor, id: string): Promise<Delivery | null> {
  const row = await one(db, `SELECT ${LISTED} FROM webhook_deliveries WHERE id = ?`, [id]);
  return row ? toDelivery(row) : null;
}

/** A delivery's body while it is kept (null after, or when it had none), from its pieces when it has them. */
export async function readDeliveryBody(db: Executor, id: string): Promise<string | null> {
  const row = await one(db, "SELECT body, body_pieces, body_expires_at FROM webhook_deliveries WHERE id = ?", [id]);
  if (!row || numOrNull(row, "body_expires_at") === null) return null;
  const pieces = num(row, "body_pieces");
  return pieces > 0 ? await readBody(db, id, pieces) : strOrNull(row, "body");
}

/**
 * How many deliveries, newest first, one page of the admin log reads at most to find `limit` of one
 * result: no index holds every delivery by result (each would be one more entry written by every
 * push), so a filtered page reads a bounded stretch of the log by time and says where it stopped.
 */
export const DELIVERY_SCAN_WINDOW = 5_000;

/**
 * A page of every delivery, newest first, without bodies, continuing below `before`: one range of
 * webhook_deliveries_received. With `result`, at most DELIVERY_SCAN_WINDOW deliveries are read for
 * the page, so it may hold fewer than `limit` while `nextBefore` still says there is more to read;
 * `searchedBackTo` is then the received_at where the read stopped (null when the page is full or
 * the log ended first), so a reader can say how far back it looked.
 */
export async function listDeliveries(
  db: Executor,
  f: { limit: number; result?: DeliveryResult | undefined; before?: DeliveryPosition | undefined },
  window = DELIVERY_SCAN_WINDOW,
): Promise<{ deliveries: Delivery[]; nextBefore: DeliveryPosition | null; searchedBackTo: number | null }> {
  const below = f.before ? "WHERE (received_at, id) < (?, ?)" : "";
  const belowArgs = f.before ? [...f.before] : [];
  const newestFirst = "ORDER BY received_at DESC, id DESC";
  if (!f.result) {
    const rows = await all(db, `SELECT ${LISTED}, id AS position FROM webhook_deliveries ${below} ${newestFirst} LIMIT +?`, [...belowArgs, f.limit + 1]);
    return { ...pageOf(rows, f.limit), searchedBackTo: null };
  }
  // The stretch this page may read ends at the window's last delivery (none: the log ends first);
  // the page is the deliveries of that result in it, read in the index's order.
  const end = await one(db, `SELECT received_at, id AS position FROM webhook_deliveries ${below} ${newestFirst} LIMIT 1 OFFSET +?`, [...belowArgs, window - 1]);
  const bounds = [...(f.before ? ["(received_at, id) < (?, ?)"] : []), ...(end ? ["(received_at, id) >= (?, ?)"] : []), "result = +?"];
  const endAt: DeliveryPosition | null = end ? [num(end, "received_at"), str(end, "position")] : null;
  const rows = await all(db, `SELECT ${LISTED}, id AS position FROM webhook_deliveries WHERE ${bounds.join(" AND ")} ${newestFirst} LIMIT +?`, [
    ...belowArgs,
    ...(endAt ?? []),
    f.result,
    f.limit + 1,
  ]);
  // Fewer than a page in the stretch: the next page starts below its end, if the log goes on past it.
  if (rows.length > f.limit) return { ...pageOf(rows, f.limit), searchedBackTo: null };
  return { deliveries: rows.map(toDelivery), nextBefore: endAt, searchedBackTo: endAt ? endAt[0] : null };
}

/** `limit` of `rows` (read with one more), and where the next page starts when there was one more. */
function pageOf(rows: Row[], limit: number): { deliveries: Delivery[]; nextBefore: DeliveryPosition | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    deliveries: page.map(toDelivery),
    nextBefore: rows.length > limit && last ? [num(last, "received_at"), str(last, "position")] : null,
  };
}

/**
 * Where a page of deliveries continues: below this delivery (its received_at and id). Not its rowid:
 * webhook_deliveries has no INTEGER PRIMARY KEY (its key is the TEXT id), and "the VACUUM command
 * may change the ROWIDs of entries in any tables that do not have an explicit INTEGER PRIMARY KEY"
 * (https://www.sqlite.org/lang_vacuum.html), so a cursor handed out before a VACUUM could skip or
 * repeat deliveries. The id is the row's key, never changed; the indexes the pages read end with it
 * (schema.sql migration 53), so a page is one range from the cursor down.
 */
export type DeliveryPosition = readonly [receivedAt: number, id: string];

/**
 * A page of a project's delivery log, newest first, without their bodies (`body` is null), and
 * the position the next page continues below (null on the last page). Keyset paging
 * (docs/webhooks.md "The delivery log"): one range of webhook_deliveries_project, or of
 * webhook_deliveries_project_result with a result (schema.sql migration 48), read from `before`
 * down, so a page costs the same at any depth of a 30-day log and deliveries received meanwhile
 * never shift it. Ties of a second are ordered by id, as the index orders them (DeliveryPosition).
 */
export async function listProjectDeliveries(
  db: Executor,
  f: { projectId: string; limit: number; result?: DeliveryResult | undefined; before?: DeliveryPosition | undefined },
): Promise<{ deliveries: Delivery[]; nextBefore: DeliveryPosition | null }> {
  const where = ["project_id = +?"];
  const args: (string | number)[] = [f.projectId];
  if (f.result) where.push("result = +?"), args.push(f.result);
  if (f.before) where.push("(received_at, id) < (?, ?)"), args.push(...f.before);
  const rows = await all(
    db,
    `SELECT ${LISTED}, id AS position FROM webhook_deliveries WHERE ${where.join(" AND ")} ORDER BY received_at DESC, id DESC LIMIT +?`,
    [...args, f.limit + 1],
  );
  return pageOf(rows, f.limit);
}

/** Rejected deliveries for a repository in the last hour (repeated failures raise an incident). */
/** The newest delivery of a project that found a pipeline file invalid or unreadable (decisions marked file_problem), or null. */
export async function lastFileProblem(
  db: Executor,
  projectId: string,
): Promise<{ delivery_id: string; received_at: number; commit_sha: string | null; message: string } | null> {
  const row = await one(
    db,
    `SELECT d.id, d.received_at, d.commit_sha, json_extract(j.value, '$.reason') AS reason
       FROM webhook_deliveries d, json_each(d.decisions) j
      WHERE d.project_id = +? AND json_extract(j.value, '$.file_problem') = 1
      ORDER BY d.received_at DESC, d.id DESC LIMIT 1`,
    [projectId],
  );
  return row
    ? { delivery_id: str(row, "id"), received_at: num(row, "received_at"), commit_sha: strOrNull(row, "commit_sha"), message: str(row, "reason") }
    : null;
}

export async function recentRejections(db: Executor, repositoryId: string, since: number): Promise<number> {
  const row = await one(db, "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE repository_id = ? AND verified = 0 AND received_at >= ?", [
    repositoryId,
    since,
  ]);
  return Number(row?.n ?? 0);
}

/** Failed deliveries (Roost could not act on them) for a repository, or for a forge's deliveries that name none, since `since`. */
export async function recentFailures(db: Executor, f: { repositoryId: string | null; forge: ForgeName }, since: number): Promise<number> {
  const row =
    f.repositoryId === null
      ? await one(db, "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE repository_id IS NULL AND host = ? AND result = 'failed' AND received_at >= ?", [
          f.forge,
          since,
        ])
      : await one(db, "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE repository_id = ? AND result = 'failed' AND received_at >= ?", [
          f.repositoryId,
          since,
        ]);
  return Number(row?.n ?? 0);
}

/** Housekeeping: bodies past their retention (and their pieces), records and dedupe keys past 30 days. */
export async function pruneDeliveries(db: Executor, now: number): Promise<void> {
  await db.execute({
    sql: "UPDATE webhook_deliveries SET body = NULL, body_pieces = 0, body_expires_at = NULL WHERE body_expires_at IS NOT NULL AND body_expires_at <= ?",
    args: [now],
  });
  await pruneBodies(db, now);
  await db.execute({ sql: "DELETE FROM webhook_deliveries WHERE received_at <= ?", args: [now - DELIVERY_RETENTION_SECONDS] });
  await db.execute({ sql: "DELETE FROM webhook_dedupe_keys WHERE created_at <= ?", args: [now - DELIVERY_RETENTION_SECONDS] });
}

/** The API shape; with the raw body for GET /v1/webhook-deliveries/{delivery_id}. */
export function toPublicDelivery(d: Delivery, includeBody: boolean): WireOf<typeof DeliveryResource> & { body?: string | null } {
  const { body, ...rest } = d;
  return includeBody ? { ...rest, body } : rest;
}
