// Roost's own database interface, the one every module uses, whatever the driver behind it:
//   - a local file (`file:` URL, the default under ROOST_DATA_DIR) through Bun's built-in
//     bun:sqlite (lib/db/bun-sqlite.ts);
//   - a remote libSQL server (`libsql://`, `https://`, `http://`, `ws(s)://`) through
//     @libsql/client (lib/db/libsql.ts).
// Rows are plain objects keyed by column name. Writes from one process go through one async
// queue that commits concurrent write transactions together (lib/db/write-queue.ts).

/** A value as a row holds it. Integers come back as numbers; BLOBs as bytes. */
export type Value = null | string | number | bigint | Uint8Array;
/** A value a statement may be given: booleans are stored as 1 and 0. */
export type InValue = Value | boolean | ArrayBuffer;
/** Positional (`?`) or named (`:name`, `@name`, `$name`) arguments. */
export type Args = readonly InValue[] | Readonly<Record<string, InValue>>;
export type Statement = string | { sql: string; args?: Args };
/**
 * An SQL condition with its arguments, for the WHERE of a statement in a guarded write batch: the
 * statement writes only while what was read before the batch still holds (lib/logs/store.ts,
 * lib/runners/job-lifecycle.ts).
 */
export interface SqlCondition {
  sql: string;
  args: InValue[];
}
/** The condition that always holds: a statement written without a guard. */
export const ALWAYS: SqlCondition = { sql: "true", args: [] };
/** All of the conditions as one; ALWAYS for none. */
export function allOf(conditions: readonly SqlCondition[]): SqlCondition {
  if (!conditions.length) return ALWAYS;
  return { sql: conditions.map((c) => `(${c.sql})`).join(" AND "), args: conditions.flatMap((c) => c.args) };
}
/** One parameter mark per value, for `IN (...)`. */
export function marks(values: readonly unknown[]): string {
  return values.map(() => "?").join(", ");
}
export type Row = Record<string, Value>;

export interface ResultSet {
  columns: string[];
  rows: Row[];
  rowsAffected: number;
  lastInsertRowid: number | bigint | undefined;
}

export interface Executor {
  execute(stmt: Statement, args?: Args): Promise<ResultSet>;
}

/** The handle a transaction's work gets; valid until that work's promise settles. */
export interface Transaction extends Executor {
  readonly closed: boolean;
}

export type DriverName = "bun:sqlite" | "libsql";

export interface Db extends Executor {
  readonly driver: DriverName;
  /**
   * The statements in order, in one write transaction: all of them or none. With `merge`, the
   * write queue may send them merged with the batches of the same kind waiting with them
   * (Mergeable); the answer is the same as theirs alone.
   */
  batch(stmts: Statement[], mode?: "write" | "deferred", merge?: Mergeable): Promise<ResultSet[]>;
  /**
   * Runs `work` in a write transaction and answers after the commit that holds it. Concurrent
   * transactions may share one commit; each runs in its own savepoint, so one that throws rolls
   * back only its own writes.
   */
  transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T>;
  /** Commits made by this process's write queue so far (each may hold several transactions). */
  readonly commits: number;
  readonly closed: boolean;
  close(): void;
  /**
   * bun:sqlite only: the reader connection's data version (`PRAGMA data_version` run, the pager's
   * figure read), which changes whenever any other connection (this process's writer, another
   * process on the same file) has committed since
   * (https://www.sqlite.org/pragma.html#pragma_data_version); null when it cannot be read
   * now (the file busy). What lib/db/verified-reads.ts checks a remembered row against.
   */
  readVersion?(): number | null;
  /**
   * bun:sqlite only: how many statements the reader connection has run so far, and the data
   * version the last of them read, as readVersion() would have answered then. Read from SQLite's
   * pager (SQLITE_FCNTL_DATA_VERSION, https://www.sqlite.org/c3ref/c_fcntl_begin_atomic_write.html):
   * no statement and no lock, so it is not the version now, only what the reader last saw. A
   * caller that used a remembered row without readVersion() confirms it this way after reads of
   * its own (lib/db/verified-reads.ts remembered).
   */
  lastRead?(): { reads: number; version: number };
}

/**
 * How the write batches of one kind are merged into fewer statements: on a remote server each
 * statement costs a prepare (and the server's own parse) whatever it holds, a push's two about
 * 0.6 ms of sqld's CPU each against 0.15 ms for its rows (docs/benchmarks.md, "Webhook pushes on
 * sqld: merged batches"). `merge` answers the statements of several items, and `split` each item's
 * results as its own batch would have answered them, or null when the merged statements wrote
 * nothing (a guard of one of them did not hold): the write queue then runs each batch as given.
 * null from `merge`: these items are not to be merged.
 */
export interface MergeKind<T> {
  merge(items: T[]): { statements: NormalizedStatement[]; split(results: ResultSet[]): ResultSet[][] | null } | null;
}
/** A write batch the write queue may merge with the batches of the same `kind` waiting next to it. */
export interface Mergeable<T = unknown> {
  kind: MergeKind<T>;
  item: T;
}

export interface NormalizedStatement {
  sql: string;
  /** Positional values, or named values keyed without their prefix. */
  args: InValue[] | Record<string, InValue>;
}

export function normalize(stmt: Statement, args?: Args): NormalizedStatement {
  if (typeof stmt === "string") return { sql: stmt, args: checkArgs(args ?? []) };
  return { sql: stmt.sql, args: checkArgs(stmt.args ?? []) };
}

function checkArgs(given: Args): InValue[] | Record<string, InValue> {
  if (Array.isArray(given)) {
    const out = given.slice() as InValue[];
    for (let i = 0; i < out.length; i++) out[i] = checkValue(out[i]);
    return out;
  }
  const named: Record<string, InValue> = {};
  for (const [name, value] of Object.entries(given as Record<string, InValue>)) named[/^[:@$]/.test(name) ? name.slice(1) : name] = checkValue(value);
  return named;
}

/** The same rules on every driver: undefined and non-finite numbers are programming errors, not NULL. */
function checkValue(value: InValue | undefined): InValue {
  if (value === undefined) throw new TypeError("undefined cannot be passed as argument to the database");
  if (typeof value === "number" && !Number.isFinite(value)) throw new RangeError("Only finite numbers can be passed as arguments");
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  return value;
}

const READ_HEAD = /^\s*(?:SELECT|PRAGMA|EXPLAIN)/i;

/** Statements that only read, sent to the reader connection outside transactions. */
export function isRead(sql: string): boolean {
  // Asked of every statement a request runs: one test, no trimmed or upper-cased copy of its text.
  return READ_HEAD.test(sql);
}

/** Statements SQLite refuses inside a transaction; the write queue runs them alone. */
export function mustRunAlone(sql: string): boolean {
  return /^\s*VACUUM\b/i.test(sql);
}

/** SQLITE_BUSY (any extended form): another connection holds the lock this call needs. */
export function isBusy(error: unknown): boolean {
  const e = error as { code?: unknown; errno?: unknown; rawCode?: unknown } | null;
  if (!e || typeof e !== "object") return false;
  if (typeof e.code === "string" && e.code.startsWith("SQLITE_BUSY")) return true;
  if (typeof e.errno === "number" && (e.errno & 0xff) === 5) return true;
  return typeof e.rawCode === "number" && (e.rawCode & 0xff) === 5;
}

/**
 * The libSQL server did not answer: the HTTP transport could not connect or lost the connection
 * (lib/db/libsql.ts turns those fetch failures into this error, so a forge or store that does not
 * answer is never mistaken for the database).
 */
export class DatabaseUnreachableError extends Error {
  constructor(cause: unknown) {
    super(`the database server does not answer: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "DatabaseUnreachableError";
  }
}

/** @libsql/client's codes for a server it cannot reach, over WebSocket (HRANA_*) or an HTTP answer that is not Hrana's (SERVER_ERROR). */
const UNREACHABLE_LIBSQL_CODES = new Set(["HRANA_WEBSOCKET_ERROR", "HRANA_CLOSED_ERROR", "SERVER_ERROR"]);

/**
 * The database server is down or unreachable (as opposed to a statement it refused): the request
 * is answered 503 database_unavailable and /readyz says not ready, until the server answers again.
 */
export function isDatabaseUnreachable(error: unknown): boolean {
  for (let e = error as { name?: unknown; code?: unknown; cause?: unknown } | null | undefined, depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    if (e instanceof DatabaseUnreachableError) return true;
    if (e.name === "LibsqlError" && UNREACHABLE_LIBSQL_CODES.has(String(e.code))) return true;
    e = e.cause as typeof e;
  }
  return false;
}

/**
 * A libSQL server (sqld) ended this transaction because it held the write lock too long while
 * another connection waited (sqld takes the lock back after about 5 s); nothing of it committed.
 */
export function isTransactionTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "TRANSACTION_TIMEOUT";
}

/**
 * A libSQL server refused to answer a request whose answer passes the size it answers at once
 * (sqld's --max-response-size, 10 MB by default; "RESPONSE_TOO_LARGE"); a file has no such limit.
 * The same rows read in smaller requests are answered.
 */
export function isResponseTooLarge(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | null | undefined, depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    if (e.code === "RESPONSE_TOO_LARGE") return true;
    e = e.cause as typeof e;
  }
  return false;
}

/**
 * Up to `limit` rows in one order, read by `read(count, last)`: at most `count` rows after `last`
 * (the last row read so far; `undefined` at first: from where the caller's page starts). One
 * request when the answer fits; when a libSQL server refuses it as too large (isResponseTooLarge),
 * the rest is asked for in halves, as many requests as it takes, so a page reads the same rows on
 * a server as on a file. Only a single row too large to answer fails. `limit` may be Infinity
 * (every row): `count` is then -1, which SQLite's LIMIT reads as none, and refused, pieces of 64.
 */
export async function readInPieces<T>(limit: number, read: (count: number, last: T | undefined) => Promise<T[]>): Promise<T[]> {
  const page: T[] = [];
  let ask = limit;
  while (page.length < limit) {
    const want = Math.min(ask, limit - page.length);
    let rows: T[];
    try {
      rows = await read(Number.isFinite(want) ? want : -1, page.at(-1));
    } catch (error) {
      if (!isResponseTooLarge(error) || want === 1) throw error;
      ask = Number.isFinite(want) ? Math.ceil(want / 2) : 64;
      continue;
    }
    page.push(...rows);
    if (rows.length < want) break;
  }
  return page;
}

/**
 * A write transaction that failed this way committed nothing and can run again from its start:
 * the database was busy (on a remote server the lock is taken by the first statement, inside the
 * work), or the server took the lock back.
 */
export function isRetryableWrite(error: unknown): boolean {
  return isBusy(error) || isTransactionTimeout(error);
}

/** How long a request to a remote server may go unanswered before it fails (ROOST_DATABASE_TIMEOUT_MS's default). */
export const DATABASE_TIMEOUT_MS = 10_000;

/** How long a call keeps retrying a busy database before it reports SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 10_000;
const BUSY_FIRST_DELAY_MS = 1;
const BUSY_MAX_DELAY_MS = 25;

/** The wait before retry number `attempt` (0, 1, ...): 1 ms doubling to 25 ms, with jitter. */
export function busyDelay(attempt: number): number {
  return Math.min(BUSY_FIRST_DELAY_MS * 2 ** attempt, BUSY_MAX_DELAY_MS) * (0.5 + Math.random());
}

/**
 * Runs `attempt` until it does not fail with SQLITE_BUSY, waiting between tries on a timer with
 * exponential backoff and jitter (1 ms doubling to 25 ms). SQLite's own busy handler would sleep
 * inside the call and stall the event loop, so every connection sets busy_timeout = 0 and waits
 * here instead (https://www.sqlite.org/c3ref/busy_timeout.html).
 */
export async function retryBusy<T>(attempt: () => T | Promise<T>, timeoutMs = BUSY_TIMEOUT_MS): Promise<T> {
  const started = performance.now();
  for (let tries = 0; ; tries++) {
    const delay = busyDelay(tries);
    try {
      return await attempt();
    } catch (error) {
      if (!isBusy(error) || performance.now() - started + delay > timeoutMs) throw error;
    }
    await Bun.sleep(delay);
  }
}
