// A remote libSQL database (sqld, Turso: `libsql://`, `https://`, `http://`, `ws(s)://`) through
// @libsql/client, behind Roost's own interface (lib/db/database.ts). Writes go through the same
// write queue as a local file, so concurrent transactions share one remote transaction and commit.
//
// Tests also run the whole suite through this driver against a local file
// (ROOST_DB_DRIVER=libsql, @libsql/client's `file:` mode), so the adapter a remote server uses is
// exercised by every test. The @libsql/client modules are imported only when used: the file mode
// loads libSQL's native addon, which the compiled binary does not carry.
import type { Client, InArgs, InValue, ResultSet as LibsqlResultSet, Transaction as LibsqlTransaction } from "@libsql/client";
import {
  DATABASE_TIMEOUT_MS,
  DatabaseUnreachableError,
  isBusy,
  isRead,
  retryBusy,
  type Db,
  type NormalizedStatement,
  type ResultSet,
  type Row,
  type Value,
} from "./database.ts";
import { WriteQueue, queuedDb, type WriteSession } from "./write-queue.ts";
import type { KeptStream } from "./kept-streams.ts";
import type * as hrana from "@libsql/hrana-client";

/**
 * The same per-connection settings as bun:sqlite's (lib/db/bun-sqlite.ts), for `file:` mode.
 * auto_vacuum is set once, on the first writer (it matters only for a new file): set again on a
 * connection that replaces a writer after SQLITE_BUSY, while another process holds the write lock,
 * it leaves a statement open and the next COMMIT fails with "SQL statements in progress".
 */
const FILE_CONNECTION_SETTINGS = ["PRAGMA busy_timeout = 0", "PRAGMA synchronous = FULL", "PRAGMA foreign_keys = ON"];

export async function openLibsql(url: string, authToken?: string, timeoutMs: number = DATABASE_TIMEOUT_MS): Promise<Db> {
  const file = url.startsWith("file:");
  let reader: Client;
  let writer: Client;
  let fresh: () => Promise<Client>;
  /** A new client on the remote server (lazy: it connects on its first request). */
  let connect: () => Client = () => writer;
  /** A remote server's reads and write batches go on streams kept open (lib/db/kept-streams.ts). */
  let kept: hrana.Client | undefined;
  let streams: typeof import("./kept-streams.ts") | undefined;
  if (file) {
    const { createClient } = await import("@libsql/client/sqlite3");
    // One connection per client, kept for the client's life, so the settings made on it hold:
    // the writer is used by the write queue alone, the reader serves reads outside transactions.
    fresh = async () => {
      const client = createClient({ url, intMode: "number", concurrency: 1 });
      try {
        for (const sql of FILE_CONNECTION_SETTINGS) await client.execute(sql);
      } catch (error) {
        client.close();
        throw error;
      }
      return client;
    };
    writer = await fresh();
    try {
      await retryBusy(() => writer.execute("PRAGMA auto_vacuum = INCREMENTAL"));
      await retryBusy(() => writer.execute("PRAGMA journal_mode = WAL"));
      reader = await fresh();
    } catch (error) {
      writer.close();
      throw error;
    }
  } else {
    // `libsql://` picks Hrana over WebSocket (https://github.com/tursodatabase/libsql-client-ts,
    // @libsql/client/ws): one connection, no HTTP request per statement; `http(s)://` and
    // `ws(s)://` are taken as written. docs/operations.md "Several hosts" has the figures.
    const { createClient } = url.startsWith("libsql:") ? await import("@libsql/client/ws") : await import("@libsql/client/web");
    connect = () => createClient({ url, authToken, intMode: "number", fetch: (request: Request) => uncompressed(request, timeoutMs) });
    reader = writer = connect();
    fresh = async () => writer;
    streams = await import("./kept-streams.ts");
    kept = streams.openHrana(url, authToken, (request) => uncompressed(request, timeoutMs));
  }

  /**
   * Every request to a remote server has a deadline: a server that accepted the connection and
   * never answers (blackholed, a half-open connection, sqld stuck) would otherwise hold the request
   * that waits for it, and the write queue behind it, forever. It fails as DatabaseUnreachableError
   * (503 database_unavailable, /readyz not ready). A WebSocket carries every request of its client,
   * so the client whose request went unanswered is closed (its other requests fail the same way)
   * and the next request opens a new connection. Over HTTP each request is its own fetch, aborted
   * at the same deadline (uncompressed).
   */
  const abandoned = new WeakSet<Client>();
  const bounded = <T>(client: Client, work: Promise<T>): Promise<T> => {
    if (file) return work;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (client === writer && client.protocol === "ws" && !db.closed) {
          abandoned.add(client);
          reader = writer = connect();
          client.close();
        }
        reject(new DatabaseUnreachableError(new Error(`no answer within ${timeoutMs} ms`)));
      }, timeoutMs);
    });
    const answered = work.catch((error: unknown) => {
      throw abandoned.has(client) ? new DatabaseUnreachableError(error) : error;
    });
    return Promise.race([answered, expired]).finally(() => clearTimeout(timer));
  };
  /**
   * The same deadline for a request on a kept stream: a WebSocket that did not answer is closed
   * (its requests fail as HRANA_CLOSED_ERROR, which isDatabaseUnreachable knows) and the next
   * request opens a new one; over HTTP the fetch is aborted at the deadline (uncompressed).
   */
  const keptBounded = <T>(work: Promise<T>): Promise<T> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const old = kept!;
        if (!/^https?:/.test(url) && !db.closed) {
          kept = streams!.openHrana(url, authToken, (request) => uncompressed(request, timeoutMs));
          old.close();
        }
        reject(new DatabaseUnreachableError(new Error(`no answer within ${timeoutMs} ms`)));
      }, timeoutMs);
    });
    return Promise.race([work, expired]).finally(() => clearTimeout(timer));
  };
  /** The kept streams' client; a WebSocket the server closed (it restarted, the network dropped it) is opened again. */
  const keptClient = (): hrana.Client => {
    if (kept!.closed && !db.closed) kept = streams!.openHrana(url, authToken, (request) => uncompressed(request, timeoutMs));
    return kept!;
  };
  const writeStream = streams ? new streams.KeptStream(keptClient) : undefined;
  const reads = streams ? new ReadPipeline(streams, keptClient, keptBounded) : undefined;
  /**
   * sqld keeps each connection's prepared statements, and one prepared before another connection
   * changed the schema answers its next run with the columns of before (tests/lib/db/client.test.ts,
   * "a cached statement still sees a column added later"). So once this process has changed the
   * schema (a migration), its kept streams are replaced. Another host's migration is not seen
   * here: a statement prepared before it answers its next run with the column names of before
   * over the values of after (on sqld 0.24, a table rebuilt with its columns in another order
   * reads one row under the wrong names; one with fewer columns fails once with an HTTP 500).
   * Roost changes the schema only in migrations at start, and every daemon is stopped for an
   * upgrade (docs/operations.md "Upgrades"), so no running daemon meets another's migration.
   */
  const schemaChanged = (): void => {
    writeStream?.close();
    reads?.close();
  };

  /**
   * In `file:` mode a statement that failed with SQLITE_BUSY stays active inside libSQL until
   * garbage collection finalizes it, and an active statement makes the next COMMIT fail ("SQL
   * statements in progress"); libSQL also keeps a statement's column names from before a schema
   * change. Either way the connection is replaced by a fresh one.
   */
  const replace = async (which: "reader" | "writer"): Promise<void> => {
    if (!file) return;
    const old = which === "reader" ? reader : writer;
    const next = await fresh();
    if (which === "reader") reader = next;
    else writer = next;
    old.close();
  };

  const queue = new WriteQueue({
    async begin() {
      let tx: LibsqlTransaction;
      const client = writer;
      try {
        tx = await bounded(client, client.transaction("write"));
      } catch (error) {
        if (isBusy(error)) await replace("writer");
        throw error;
      }
      const session = clientSession(tx, (work) => bounded(client, work));
      return streams ? watchingSchema(session, schemaChanged) : session;
    },
    // A remote server: writes known up front in one request, BEGIN IMMEDIATE and COMMIT included
    // (https://github.com/tursodatabase/libsql-client-ts, `client.batch(stmts, "write")`). A file
    // commits in-process, where a group on one open transaction is cheaper.
    batch: writeStream
      ? async (stmts) => {
          const results = await keptBounded(writeStream.run((stream) => streams!.batchOn(stream, stmts.map(toLibsql), "write")));
          if (stmts.some(changesSchema)) schemaChanged();
          return results;
        }
      : undefined,
    alone: async (stmt) => {
      try {
        const rs = toResult(await bounded(writer, writer.execute(toLibsql(stmt))));
        if (streams && changesSchema(stmt)) schemaChanged();
        return rs;
      } catch (error) {
        if (isBusy(error)) await replace("writer");
        throw error;
      }
    },
  });

  const read = async (statement: NormalizedStatement): Promise<ResultSet> => {
    if (reads) return reads.read(statement);
    try {
      const rs = await reader.execute(toLibsql(statement));
      if (file && rs.rows.length > 0 && rs.rows[0]!.length !== rs.columns.length) {
        await replace("reader");
        return toResult(await reader.execute(toLibsql(statement)));
      }
      return toResult(rs);
    } catch (error) {
      if (isBusy(error)) await replace("reader");
      throw error;
    }
  };

  const db = queuedDb(
    "libsql",
    queue,
    (statement) => retryBusy(() => read(statement)),
    () => {
      writer.close();
      if (reader !== writer) reader.close();
      writeStream?.close();
      reads?.close();
      kept?.close();
    },
  );
  return db;
}

/**
 * Hrana over HTTP with uncompressed answers. Bun's fetch asks for gzip, and sqld then compresses
 * every answer, most of them a few hundred bytes: on loopback or a LAN that costs both ends CPU
 * and saves nothing measurable (a quarter of sqld's time per request, in `npm run bench -- sqld`).
 * A fetch that fails (the server is down or unreachable, or has not answered within the deadline)
 * fails as DatabaseUnreachableError.
 */
async function uncompressed(request: Request, timeoutMs: number): Promise<Response> {
  request.headers.set("accept-encoding", "identity");
  try {
    // The answer's body too must arrive within the deadline; the abort closes the connection.
    return await fetch(request, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    // Connection refused or reset, no route, DNS: the server does not answer (a 503, not a 500).
    throw new DatabaseUnreachableError(error);
  }
}

/** How many read requests may be on their way to the server at once. */
const READ_PIPELINE_DEPTH = 2;
/** At most this many reads in one request. */
const MAX_READS_PER_REQUEST = 256;

/**
 * Reads outside transactions on a remote server, sent together. Each request costs the server and
 * this process far more than a statement inside it (about 20 times, for a short SELECT), and a
 * busy daemon reads for many requests at once: reads wait while READ_PIPELINE_DEPTH requests are
 * on their way, then all go as one batch (one round trip, each read on its own as if alone). A lone read
 * waits for nothing. A read starts no sooner than asked, so it never sees older data than alone.
 * Statements other than SELECT, and a batch in which one read failed, are sent one by one.
 * Each request goes on a kept stream (lib/db/kept-streams.ts), the least busy of READ_PIPELINE_DEPTH.
 */
class ReadPipeline {
  readonly #streams: typeof import("./kept-streams.ts");
  readonly #kept: Array<{ stream: KeptStream; busy: number }>;
  /** The deadline of a request to the server. */
  readonly #bounded: <T>(work: Promise<T>) => Promise<T>;
  #waiting: Array<{ stmt: NormalizedStatement; resolve(rs: ResultSet): void; reject(error: unknown): void }> = [];
  #inFlight = 0;
  #scheduled = false;

  constructor(streams: typeof import("./kept-streams.ts"), client: () => hrana.Client, bounded: <T>(work: Promise<T>) => Promise<T>) {
    this.#streams = streams;
    this.#kept = Array.from({ length: READ_PIPELINE_DEPTH }, () => ({ stream: new streams.KeptStream(client), busy: 0 }));
    this.#bounded = bounded;
  }

  read(stmt: NormalizedStatement): Promise<ResultSet> {
    if (!/^\s*SELECT\b/i.test(stmt.sql)) return this.#one(stmt);
    return new Promise((resolve, reject) => {
      this.#waiting.push({ stmt, resolve, reject });
      this.#schedule();
    });
  }

  close(): void {
    for (const k of this.#kept) k.stream.close();
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= READ_PIPELINE_DEPTH || this.#waiting.length === 0) return;
    this.#scheduled = true;
    // After the current microtasks: reads started together (Promise.all) leave in one request.
    queueMicrotask(() => {
      this.#scheduled = false;
      void this.#send();
    });
  }

  async #send(): Promise<void> {
    if (this.#inFlight >= READ_PIPELINE_DEPTH || this.#waiting.length === 0) return;
    const taken = this.#waiting.splice(0, MAX_READS_PER_REQUEST);
    this.#inFlight++;
    try {
      if (taken.length === 1) {
        const only = taken[0]!;
        await this.#one(only.stmt).then(only.resolve, only.reject);
        return;
      }
      let results: ResultSet[] | undefined;
      try {
        results = await this.#request((stream) =>
          this.#streams.batchOn(
            stream,
            taken.map((t) => toLibsql(t.stmt)),
            "read",
          ),
        );
      } catch {
        // Which read failed, and why, is each one's own answer.
        await Promise.all(taken.map((t) => this.#one(t.stmt).then(t.resolve, t.reject)));
        return;
      }
      taken.forEach((t, i) => t.resolve(results[i]!));
    } finally {
      this.#inFlight--;
      this.#schedule();
    }
  }

  #one(stmt: NormalizedStatement): Promise<ResultSet> {
    return this.#request((stream) => this.#streams.executeOn(stream, toLibsql(stmt)));
  }

  /** One request on the least busy kept stream, within the deadline. */
  async #request<T>(use: (stream: hrana.Stream) => Promise<T>): Promise<T> {
    const kept = this.#kept.reduce((a, b) => (b.busy < a.busy ? b : a));
    kept.busy++;
    try {
      return await this.#bounded(kept.stream.run(use));
    } finally {
      kept.busy--;
    }
  }
}

/** A statement that changes the schema (see schemaChanged in openLibsql). */
function changesSchema(stmt: NormalizedStatement): boolean {
  return /^\s*(?:CREATE|ALTER|DROP)\b/i.test(stmt.sql);
}

/** `session`, calling `changed` after it commits a statement that changed the schema. */
function watchingSchema(session: WriteSession, changed: () => void): WriteSession {
  let changes = false;
  const seen = (stmt: NormalizedStatement) => (changes ||= changesSchema(stmt));
  return {
    execute: (stmt) => (seen(stmt), session.execute(stmt)),
    batch: (stmts) => (stmts.forEach(seen), session.batch(stmts)),
    later: (stmt) => (seen(stmt), session.later(stmt)),
    commit: async () => {
      await session.commit();
      if (changes) changed();
    },
    rollback: () => session.rollback(),
  };
}

/** The savepoint around statements sent together, to replay them one by one if one fails. */
const TOGETHER = "roost_together";

/**
 * A write session on one @libsql/client transaction. On a remote server each call is a round trip
 * (the first one carries BEGIN IMMEDIATE), so:
 *   - statements given with `later` wait, and go in one request with the next statement;
 *   - statements a transaction starts together (`Promise.all` of `tx.execute`) go in one request,
 *     inside a savepoint: if one fails, the request is undone to it and the statements run again
 *     one at a time, so each gets the answer (or the error) it would have got alone.
 */
function clientSession(tx: LibsqlTransaction, bounded: <T>(work: Promise<T>) => Promise<T>): WriteSession {
  let waiting: NormalizedStatement[] = [];
  let together: Array<{ stmt: NormalizedStatement; resolve(rs: ResultSet): void; reject(error: unknown): void }> = [];
  const send = async (stmts: NormalizedStatement[]): Promise<ResultSet[]> => {
    const ahead = waiting;
    waiting = [];
    if (ahead.length === 0 && stmts.length === 1) return [writeResult(await bounded(tx.execute(toLibsql(stmts[0]!))), stmts[0]!)];
    const results = await bounded(tx.batch([...ahead, ...stmts].map(toLibsql)));
    return results.slice(ahead.length).map((rs, i) => writeResult(rs, stmts[i]!));
  };
  const sendTogether = async (): Promise<void> => {
    const taken = together;
    together = [];
    if (taken.length === 1) {
      const only = taken[0]!;
      return send([only.stmt]).then(([rs]) => only.resolve(rs!), only.reject);
    }
    const ahead = waiting.length;
    const mark = (sql: string): NormalizedStatement => ({ sql, args: [] });
    let results: ResultSet[];
    try {
      results = await send([mark(`SAVEPOINT ${TOGETHER}`), ...taken.map((t) => t.stmt), mark(`RELEASE ${TOGETHER}`)]);
    } catch (error) {
      const at = (error as { statementIndex?: unknown }).statementIndex;
      const failedInside = typeof at === "number" && at > ahead && at <= ahead + taken.length;
      if (!failedInside) return taken.forEach((t) => t.reject(error));
      try {
        await bounded(tx.batch([toLibsql(mark(`ROLLBACK TO ${TOGETHER}`)), toLibsql(mark(`RELEASE ${TOGETHER}`))]));
      } catch {
        return taken.forEach((t) => t.reject(error));
      }
      for (const t of taken) await send([t.stmt]).then(([rs]) => t.resolve(rs!), t.reject);
      return;
    }
    taken.forEach((t, i) => t.resolve(results[i + 1]!));
  };
  return {
    execute: (stmt) =>
      new Promise<ResultSet>((resolve, reject) => {
        together.push({ stmt, resolve, reject });
        // After the current microtasks, so that statements started together leave together.
        if (together.length === 1) queueMicrotask(() => void sendTogether());
      }),
    batch: send,
    later: (stmt) => void waiting.push(stmt),
    commit: async () => {
      // COMMIT ends every savepoint still open, so a RELEASE left waiting need not be sent.
      if (waiting.some((s) => !/^\s*RELEASE\b/i.test(s.sql))) await send([]);
      waiting = [];
      await bounded(tx.commit());
      tx.close();
    },
    rollback: async () => {
      waiting = [];
      try {
        await bounded(tx.rollback());
      } finally {
        tx.close();
      }
    },
  };
}

/**
 * A libSQL server (Hrana) refuses named arguments the statement does not use ("ARGS_INVALID: too
 * many parameters"), where SQLite in-process ignores them: only the names the SQL has (:name,
 * @name or $name) are sent, so a statement made of optional parts works the same on every driver.
 */
function toLibsql(stmt: NormalizedStatement): { sql: string; args: InArgs } {
  if (Array.isArray(stmt.args)) return { sql: stmt.sql, args: stmt.args };
  const used: Record<string, InValue> = {};
  for (const [name, value] of Object.entries(stmt.args)) if (new RegExp(`[:@$]${RegExp.escape(name)}(?![A-Za-z0-9_])`).test(stmt.sql)) used[name] = value;
  return { sql: stmt.sql, args: used };
}

/** @libsql/client's rows (values by name and by index) as plain objects; BLOBs as bytes. */
function toResult(rs: LibsqlResultSet): ResultSet {
  return plainResult(rs.columns, rs.rows, rs.rowsAffected, rs.lastInsertRowid);
}

const RETURNING = /\bRETURNING\b/i;

/**
 * toResult of a statement in a write transaction. On a file, @libsql/client answers rowsAffected 0
 * for any statement that answers rows (its sqlite3.js reads them with all(), which does not say
 * what changed), where a server and bun:sqlite say how many rows it wrote: a write with RETURNING
 * answers one row for each row it inserted, updated or deleted, so that count is its rowsAffected
 * (https://www.sqlite.org/lang_returning.html). A push's delivery INSERT is written when it
 * answers a row (lib/webhooks/accept.ts); read as 0, the push was taken for unwritten and written again.
 */
function writeResult(rs: LibsqlResultSet, stmt: NormalizedStatement): ResultSet {
  const rowsAffected = rs.rowsAffected === 0 && rs.rows.length > 0 && !isRead(stmt.sql) && RETURNING.test(stmt.sql) ? rs.rows.length : rs.rowsAffected;
  return plainResult(rs.columns, rs.rows, rowsAffected, rs.lastInsertRowid);
}

/** Rows whose values are read by index as plain objects by column name (the first of duplicate names wins); BLOBs as bytes. */
export function plainResult(columns: string[], source: ArrayLike<unknown>[], rowsAffected: number, lastInsertRowid: number | bigint | undefined): ResultSet {
  const rows = source.map((values) => {
    const row: Row = {};
    for (let i = 0; i < columns.length; i++) {
      const name = columns[i]!;
      if (Object.hasOwn(row, name)) continue;
      const value = values[i] as Value | ArrayBuffer;
      row[name] = value instanceof ArrayBuffer ? new Uint8Array(value) : value;
    }
    return row;
  });
  return { columns, rows, rowsAffected, lastInsertRowid };
}
