// The embedded database behind the @libsql/client `Client` interface, with prepared statements
// kept between calls.
//
// Why not @libsql/client's own file driver: it prepares every statement on every call, which
// costs 50–120 µs per query on Roost's schema against ~4 µs for a cached statement
// (`npm run bench` measures both). Every other module keeps using the Client
// interface, and a remote libSQL server (ROOST_DATABASE_URL=libsql://…) still goes through
// @libsql/client unchanged.
//
// Concurrency inside one process: libSQL's driver is synchronous and its busy timeout sleeps
// inside the call, so a second in-process writer would block the event loop while the first
// holds a transaction across an `await` (a stall until the timeout). Hence:
//   - one writer connection, used by one writer at a time through an async lock (a write
//     statement, a batch, or a whole transaction from BEGIN to COMMIT);
//   - one reader connection for reads outside transactions, which never wait (WAL);
//   - between processes, SQLite's busy timeout arbitrates as usual.
import Database from "libsql";
import type { Client, InArgs, InStatement, InValue, ResultSet, Row, Transaction, TransactionMode } from "@libsql/client";
import { LibsqlError } from "@libsql/core/api";

type Native = InstanceType<typeof Database>;
type NativeStatement = ReturnType<Native["prepare"]>;

interface Prepared {
  statement: NativeStatement;
  returnsData: boolean;
  columns: string[];
  /** Shared by every row of this statement: index access and `length` as getters over the named values. */
  rowPrototype: object;
}

const STATEMENT_CACHE_LIMIT = 512;

/** How long a writer waits for this process's other writer before reporting a programming error. */
export const WRITE_LOCK_TIMEOUT_MS = 30_000;

class Connection {
  readonly native: Native;
  readonly #cache = new Map<string, Prepared>();

  constructor(
    path: string,
    busyTimeoutMs: number,
    private readonly onSchemaChange: () => void = () => {},
  ) {
    this.native = new Database(path, { timeout: busyTimeoutMs } as never);
    // Per-connection settings, on every connection: WAL (readers beside one writer), commits
    // synced before they are acknowledged (an acknowledged write survives a power loss), and
    // foreign keys enforced.
    this.native.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;");
  }

  prepare(sql: string): Prepared {
    let prepared = this.#cache.get(sql);
    if (prepared) return prepared;
    const statement = this.native.prepare(sql);
    let returnsData = true;
    try {
      statement.raw(true);
    } catch {
      returnsData = false; // raw() throws for statements that return no data
    }
    const columns = returnsData ? statement.columns().map((c: { name: string }) => c.name) : [];
    prepared = { statement, returnsData, columns, rowPrototype: rowPrototype(columns) };
    if (this.#cache.size >= STATEMENT_CACHE_LIMIT) this.#cache.clear();
    this.#cache.set(sql, prepared);
    return prepared;
  }

  /** Schema changes invalidate what a cached statement knows about its columns. */
  forget(): void {
    this.#cache.clear();
  }

  run(stmt: InStatement): ResultSet {
    const { sql, args } = normalize(stmt);
    try {
      if (/^\s*(CREATE|ALTER|DROP)\b/i.test(sql)) {
        this.#cache.clear();
        this.onSchemaChange();
      }
      let prepared = this.prepare(sql);
      if (prepared.returnsData) {
        let raw = prepared.statement.all(args) as unknown[][];
        if (raw.length > 0 && raw[0]!.length !== prepared.columns.length) {
          // The schema changed under a cached `SELECT *` (another process migrated): prepare afresh.
          this.#cache.clear();
          prepared = this.prepare(sql);
          raw = prepared.statement.all(args) as unknown[][];
        }
        return resultSet(prepared.columns, raw.map((values) => toRow(values, prepared)), 0, undefined);
      }
      const info = prepared.statement.run(args) as { changes: number; lastInsertRowid: number | bigint };
      return resultSet([], [], info.changes, BigInt(info.lastInsertRowid));
    } catch (error) {
      throw mapError(error);
    }
  }

  close(): void {
    this.#cache.clear();
    if (this.native.open) this.native.close();
  }
}

function normalize(stmt: InStatement): { sql: string; args: unknown[] | Record<string, unknown> } {
  if (typeof stmt === "string") return { sql: stmt, args: [] };
  const given = stmt.args ?? [];
  if (Array.isArray(given)) return { sql: stmt.sql, args: given.map(toSqlValue) };
  const named: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(given)) named[/^[@$:]/.test(name) ? name.slice(1) : name] = toSqlValue(value);
  return { sql: stmt.sql, args: named };
}

function toSqlValue(value: InValue): unknown {
  if (typeof value === "boolean") return value ? 1 : 0;
  if (value === undefined) throw new TypeError("undefined cannot be passed as argument to the database");
  if (typeof value === "number" && !Number.isFinite(value)) throw new RangeError("Only finite numbers can be passed as arguments");
  if (value instanceof Date) return value.valueOf();
  if (value instanceof ArrayBuffer) return Buffer.from(value);
  return value;
}

/**
 * The row shape of @libsql/client: values by column name (own, enumerable) and by index and
 * `length` (non-enumerable). Index access lives on a prototype shared by the statement's rows,
 * so building a row is one plain assignment per column.
 */
function rowPrototype(columns: string[]): object {
  const proto: Record<string | number, unknown> = {};
  Object.defineProperty(proto, "length", { value: columns.length });
  columns.forEach((_, i) => {
    Object.defineProperty(proto, i, {
      get(this: { __values: unknown[] }) {
        return this.__values[i];
      },
    });
  });
  return proto;
}

function toRow(values: unknown[], prepared: Prepared): Row {
  const row = Object.create(prepared.rowPrototype) as Record<string, unknown>;
  Object.defineProperty(row, "__values", { value: values });
  const columns = prepared.columns;
  for (let i = 0; i < values.length; i++) {
    let value = values[i];
    if (typeof value === "bigint") value = values[i] = Number(value);
    const name = columns[i]!;
    if (!Object.hasOwn(row, name)) row[name] = value; // duplicate names: the first column wins, as in @libsql/client
  }
  return row as unknown as Row;
}

function resultSet(columns: string[], rows: Row[], rowsAffected: number, lastInsertRowid: bigint | undefined): ResultSet {
  return {
    columns,
    columnTypes: columns.map(() => ""),
    rows,
    rowsAffected,
    lastInsertRowid,
    toJSON: () => ({ columns, rows: rows.map((r) => Array.from({ length: r.length }, (_, i) => r[i])), rowsAffected, lastInsertRowid: lastInsertRowid?.toString() ?? null }),
  };
}

const SQLITE_BASE_CODES: Record<number, string> = {
  1: "SQLITE_ERROR", 5: "SQLITE_BUSY", 6: "SQLITE_LOCKED", 8: "SQLITE_READONLY", 10: "SQLITE_IOERR", 11: "SQLITE_CORRUPT",
  13: "SQLITE_FULL", 14: "SQLITE_CANTOPEN", 19: "SQLITE_CONSTRAINT", 20: "SQLITE_MISMATCH", 21: "SQLITE_MISUSE", 25: "SQLITE_RANGE",
};

function mapError(error: unknown): unknown {
  if (error instanceof (Database as unknown as { SqliteError: new (...a: never[]) => Error }).SqliteError) {
    const e = error as Error & { code?: string; rawCode?: number };
    const base = e.rawCode === undefined ? "SQLITE_UNKNOWN" : (SQLITE_BASE_CODES[e.rawCode & 0xff] ?? `SQLITE_UNKNOWN_${e.rawCode & 0xff}`);
    return new LibsqlError(e.message, base, e.code, e.rawCode, e);
  }
  return error;
}

function isRead(stmt: InStatement): boolean {
  const sql = (typeof stmt === "string" ? stmt : stmt.sql).trimStart().slice(0, 8).toUpperCase();
  return sql.startsWith("SELECT") || sql.startsWith("PRAGMA") || sql.startsWith("EXPLAIN");
}

function beginFor(mode: TransactionMode | undefined): string {
  return mode === "read" || mode === "deferred" ? "BEGIN DEFERRED" : "BEGIN IMMEDIATE";
}

/** An async FIFO lock: one holder at a time, waiting without blocking the event loop. */
class WriteLock {
  #tail: Promise<void> = Promise.resolve();

  async acquire(): Promise<() => void> {
    let release!: () => void;
    const next = new Promise<void>((resolve) => (release = resolve));
    const previous = this.#tail;
    this.#tail = previous.then(() => next);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        previous,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error("waited 30 s for this process's database write lock: a write inside a transaction must use the transaction, not the client")),
            WRITE_LOCK_TIMEOUT_MS,
          );
        }),
      ]);
    } catch (error) {
      // Give our turn away when the previous holder finally finishes, so the queue keeps moving.
      void previous.then(release);
      throw error;
    } finally {
      clearTimeout(timer);
    }
    let released = false;
    return () => {
      if (!released) {
        released = true;
        release();
      }
    };
  }
}

class EmbeddedTransaction implements Transaction {
  #done = false;
  constructor(
    private readonly writer: Connection,
    private readonly release: () => void,
  ) {}

  get closed(): boolean {
    return this.#done;
  }

  async execute(stmt: InStatement | string, args?: InArgs): Promise<ResultSet> {
    this.#check();
    return this.writer.run(args === undefined ? (stmt as InStatement) : { sql: stmt as string, args });
  }

  async batch(stmts: InStatement[]): Promise<ResultSet[]> {
    this.#check();
    return stmts.map((s) => this.writer.run(s));
  }

  async executeMultiple(sql: string): Promise<void> {
    this.#check();
    this.writer.native.exec(sql);
  }

  async commit(): Promise<void> {
    this.#check();
    try {
      this.writer.run("COMMIT");
    } finally {
      this.#finish();
    }
  }

  async rollback(): Promise<void> {
    if (this.#done) return;
    try {
      if (this.writer.native.inTransaction) this.writer.run("ROLLBACK");
    } finally {
      this.#finish();
    }
  }

  close(): void {
    if (this.#done) return;
    try {
      if (this.writer.native.inTransaction) this.writer.run("ROLLBACK");
    } finally {
      this.#finish();
    }
  }

  #check(): void {
    if (this.#done) throw new LibsqlError("The transaction is closed", "TRANSACTION_CLOSED");
  }

  #finish(): void {
    this.#done = true;
    this.release();
  }
}

/** One lock per database file, shared by every client of this process that opens it. */
const LOCKS = new Map<string, WriteLock>();

export function createEmbeddedClient(path: string, busyTimeoutMs: number): Client & { pragma(name: string): { reader: unknown; writer: unknown } } {
  const reader = new Connection(path, busyTimeoutMs);
  const writer = new Connection(path, busyTimeoutMs, () => reader.forget());
  let lock = LOCKS.get(path);
  if (!lock) LOCKS.set(path, (lock = new WriteLock()));
  let closed = false;

  const shared = lock;
  const withWriter = async <T>(work: () => T): Promise<T> => {
    const release = await shared.acquire();
    try {
      return work();
    } finally {
      release();
    }
  };

  const client = {
    protocol: "file",
    get closed() {
      return closed;
    },
    async execute(stmt: InStatement | string, args?: InArgs): Promise<ResultSet> {
      const statement = args === undefined ? (stmt as InStatement) : { sql: stmt as string, args };
      if (isRead(statement)) return reader.run(statement);
      return withWriter(() => writer.run(statement));
    },
    async batch(stmts: InStatement[], mode?: TransactionMode): Promise<ResultSet[]> {
      return withWriter(() => {
        writer.run(beginFor(mode));
        try {
          const results = stmts.map((s) => writer.run(s));
          writer.run("COMMIT");
          return results;
        } catch (error) {
          if (writer.native.inTransaction) writer.run("ROLLBACK");
          throw error;
        }
      });
    },
    async migrate(stmts: InStatement[]): Promise<ResultSet[]> {
      return client.batch(stmts, "deferred");
    },
    async transaction(mode?: TransactionMode): Promise<Transaction> {
      const release = await shared.acquire();
      try {
        writer.run(beginFor(mode));
      } catch (error) {
        release();
        throw error;
      }
      return new EmbeddedTransaction(writer, release);
    },
    async executeMultiple(sql: string): Promise<void> {
      await withWriter(() => writer.native.exec(sql));
    },
    async sync(): Promise<undefined> {
      return undefined;
    },
    async reconnect(): Promise<void> {},
    close(): void {
      closed = true;
      writer.close();
      reader.close();
    },
    /** A pragma's value on both connections (tests check the per-connection settings). */
    pragma(name: string) {
      const read = (c: Connection) => (c.native.prepare(`PRAGMA ${name.replace(/[^a-z_]/g, "")}`).raw(true).get() as unknown[])[0];
      return { reader: read(reader), writer: read(writer) };
    },
  };
  return client as unknown as Client & { pragma(name: string): { reader: unknown; writer: unknown } };
}
