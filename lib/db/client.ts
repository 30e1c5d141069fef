// Opening the database: an embedded libSQL file under ROOST_DATA_DIR by default, or any libSQL
// database named by ROOST_DATABASE_URL (sqld, Turso). Every process that opens the same file
// shares it safely: WAL lets readers run beside one writer, and the busy timeout makes a second
// writer wait instead of failing with SQLITE_BUSY (two `roost serve` processes on one file).
import { createClient, type Client, type InArgs, type InStatement, type Row, type Transaction, type TransactionMode } from "@libsql/client";

export type Db = Client;
export type Executor = Client | Transaction;

export const BUSY_TIMEOUT_MS = 10_000;

/** How long a writer waits for this process's other writer before reporting a programming error. */
export const WRITE_LOCK_TIMEOUT_MS = 30_000;

export async function openDatabase(url: string, authToken?: string): Promise<Db> {
  const raw = createClient({ url, authToken, timeout: BUSY_TIMEOUT_MS, intMode: "number" });
  const db = url.startsWith("file:") ? serializeWrites(raw, writeLockFor(url)) : raw;
  if (url.startsWith("file:")) {
    // journal_mode is a property of the file and persists; foreign keys are on by default in libSQL
    // connections, and are asserted here so a build of libSQL that changes that default fails loudly.
    await db.execute("PRAGMA journal_mode = WAL");
    await db.execute("PRAGMA synchronous = NORMAL");
    const fk = await db.execute("PRAGMA foreign_keys");
    if (Number(fk.rows[0]?.[0]) !== 1) throw new Error("libSQL connection opened without foreign key enforcement");
  }
  return db;
}

/**
 * One writer at a time inside this process, waiting asynchronously.
 *
 * Why: the embedded libSQL driver is synchronous, and SQLite's busy timeout sleeps *inside* the
 * call. If one request holds a write transaction across an `await` and another request on a
 * second pooled connection starts writing, the second call blocks the event loop waiting for a
 * lock that the first can only release on that same event loop: a stall until the busy timeout.
 * So every write in this process (a write transaction, a write batch, or a single statement that
 * is not a read) first takes this async lock; reads never wait (WAL). Between processes the busy
 * timeout still arbitrates, which is fine because the other process is not blocked by us.
 */
interface WriteLock {
  tail: Promise<void>;
}
/** One lock per database file, shared by every client of this process that opens it. */
const WRITE_LOCKS = new Map<string, WriteLock>();
function writeLockFor(url: string): WriteLock {
  let lock = WRITE_LOCKS.get(url);
  if (!lock) WRITE_LOCKS.set(url, (lock = { tail: Promise.resolve() }));
  return lock;
}

function serializeWrites(client: Client, lock: WriteLock): Client {
  const acquire = async (): Promise<() => void> => {
    let release!: () => void;
    const next = new Promise<void>((resolve) => (release = resolve));
    const previous = lock.tail;
    lock.tail = previous.then(() => next);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      previous,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error("waited 30 s for this process's database write lock: a write inside a transaction must use the transaction, not the client")),
          WRITE_LOCK_TIMEOUT_MS,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    let released = false;
    return () => {
      if (!released) {
        released = true;
        release();
      }
    };
  };
  const isRead = (stmt: InStatement): boolean => {
    const sql = (typeof stmt === "string" ? stmt : stmt.sql).trimStart().slice(0, 12).toUpperCase();
    return sql.startsWith("SELECT") || sql.startsWith("PRAGMA") || sql.startsWith("EXPLAIN");
  };
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop === "execute") {
        return async (stmt: InStatement | string, args?: InArgs) => {
          const statement = (args === undefined ? stmt : { sql: stmt as string, args }) as InStatement;
          if (isRead(statement)) return target.execute(statement);
          const release = await acquire();
          try {
            return await target.execute(statement);
          } finally {
            release();
          }
        };
      }
      if (prop === "batch") {
        return async (stmts: InStatement[], mode?: TransactionMode) => {
          if (mode === "read") return target.batch(stmts, mode);
          const release = await acquire();
          try {
            return await target.batch(stmts, mode);
          } finally {
            release();
          }
        };
      }
      if (prop === "transaction") {
        return async (mode?: TransactionMode) => {
          if (mode === "read") return target.transaction(mode);
          const release = await acquire();
          let tx: Transaction;
          try {
            tx = await target.transaction(mode);
          } catch (error) {
            release();
            throw error;
          }
          const wrap = <K extends "commit" | "rollback">(name: K) => async () => {
            try {
              return await tx[name]();
            } finally {
              release();
            }
          };
          return new Proxy(tx, {
            get(t, p, r) {
              if (p === "commit") return wrap("commit");
              if (p === "rollback") return wrap("rollback");
              if (p === "close") return () => {
                try {
                  t.close();
                } finally {
                  release();
                }
              };
              const value = Reflect.get(t, p, r);
              return typeof value === "function" ? value.bind(t) : value;
            },
          });
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

export async function one(db: Executor, sql: string, args: InArgs = []): Promise<Row | null> {
  const result = await db.execute({ sql, args });
  return result.rows[0] ?? null;
}

export async function all(db: Executor, sql: string, args: InArgs = []): Promise<Row[]> {
  return (await db.execute({ sql, args })).rows;
}

export async function run(db: Executor, sql: string, args: InArgs = []): Promise<number> {
  return (await db.execute({ sql, args })).rowsAffected;
}

/** Runs `work` in one write transaction (BEGIN IMMEDIATE on a file), committing on success. */
export async function inTransaction<T>(db: Db, work: (tx: Transaction) => Promise<T>): Promise<T> {
  const tx = await db.transaction("write");
  try {
    const result = await work(tx);
    await tx.commit();
    return result;
  } catch (error) {
    await tx.rollback().catch(() => {});
    throw error;
  } finally {
    tx.close();
  }
}

// Row readers: libSQL rows are loosely typed; these say what a column must hold.
export function str(row: Row, column: string): string {
  return String(row[column]);
}
export function strOrNull(row: Row, column: string): string | null {
  const v = row[column];
  return v === null || v === undefined ? null : String(v);
}
export function num(row: Row, column: string): number {
  return Number(row[column]);
}
export function numOrNull(row: Row, column: string): number | null {
  const v = row[column];
  return v === null || v === undefined ? null : Number(v);
}
export function bool(row: Row, column: string): boolean {
  return Number(row[column]) === 1;
}
