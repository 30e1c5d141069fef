// Point reads of one kind (a row by its key) that concurrent requests make, merged into one
// statement on a libSQL server. sqld parses and prepares every statement it is sent afresh, which
// costs it far more than reading a row by its primary key (docs/benchmarks.md "Log appends on
// sqld"); a busy daemon reads the same kind of row for many requests at once (each runner
// request's token, each log append's job). The keys that arrive while a read of their kind is on
// its way are read together next, with one statement over a JSON array of them
// (https://www.sqlite.org/json1.html#jeach), the way a DataLoader batches (github.com/graphql/dataloader).
// When that statement fails, each key is read again alone, so that only a read that fails alone fails.
//
// Nothing is kept between reads: a read starts no sooner than it is asked for, so it never answers
// older data than a read of its own (a revoked runner token is refused at once, by every daemon).
// bun:sqlite reads a row in microseconds in-process, and a transaction must read its own writes
// on its own connection: both read alone.
import type { Db, Executor, Row } from "./database.ts";

/** One kind of point read, by key. */
export interface GroupedRead {
  /** The row whose key is `key`, or null: grouped with others of its kind on a libSQL database, alone elsewhere. */
  (ex: Executor, key: string): Promise<Row | null>;
}

/** How many grouped reads of one kind may be on their way at once; the keys that come meanwhile wait for one to end. */
const IN_FLIGHT = 1;
/** At most this many keys in one statement. */
const MAX_KEYS = 256;

interface Waiter {
  resolve(row: Row | null): void;
  reject(error: unknown): void;
}

interface Waiting {
  keys: Map<string, Waiter[]>;
  inFlight: number;
  scheduled: boolean;
}

/**
 * A point read as `alone` (its one `?` is the key) and as `grouped` (its one `?` is a JSON array
 * of keys, its rows each with the key they answer as column `keyColumn`). The two must answer the
 * same columns for a key.
 */
export function groupedRead(read: { alone: string; grouped: string; keyColumn: string }): GroupedRead {
  const waitingOn = new WeakMap<Db, Waiting>();

  const send = async (db: Db, w: Waiting): Promise<void> => {
    w.scheduled = false;
    if (w.inFlight >= IN_FLIGHT || w.keys.size === 0) return;
    const taken = new Map<string, Waiter[]>();
    for (const [key, waiters] of w.keys) {
      if (taken.size >= MAX_KEYS) break;
      taken.set(key, waiters);
      w.keys.delete(key);
    }
    w.inFlight++;
    const alone = ([key, waiters]: [string, Waiter[]]) =>
      db.execute({ sql: read.alone, args: [key] }).then(
        (rs) => waiters.forEach((waiter) => waiter.resolve(rs.rows[0] ?? null)),
        (error: unknown) => waiters.forEach((waiter) => waiter.reject(error)),
      );
    try {
      if (taken.size === 1) return await alone([...taken][0]!);
      let rows: Row[];
      try {
        rows = (await db.execute({ sql: read.grouped, args: [JSON.stringify([...taken.keys()])] })).rows;
      } catch {
        // Which key failed, and why, is each one's own answer (as the read pipeline's batches, lib/db/libsql.ts).
        await Promise.all([...taken].map(alone));
        return;
      }
      const byKey = new Map<string, Row>();
      for (const row of rows) if (!byKey.has(String(row[read.keyColumn]))) byKey.set(String(row[read.keyColumn]), row);
      for (const [key, waiters] of taken) for (const waiter of waiters) waiter.resolve(byKey.get(key) ?? null);
    } finally {
      w.inFlight--;
      schedule(db, w);
    }
  };

  const schedule = (db: Db, w: Waiting): void => {
    if (w.scheduled || w.inFlight >= IN_FLIGHT || w.keys.size === 0) return;
    w.scheduled = true;
    // After the current microtasks: the reads a request starts together (its token, its job) leave
    // in one request of the database's own read pipeline (lib/db/libsql.ts).
    queueMicrotask(() => void send(db, w));
  };

  return async (ex, key) => {
    if (!isLibsqlDb(ex)) return (await ex.execute({ sql: read.alone, args: [key] })).rows[0] ?? null;
    let w = waitingOn.get(ex);
    if (!w) waitingOn.set(ex, (w = { keys: new Map(), inFlight: 0, scheduled: false }));
    const waiting = w;
    return new Promise<Row | null>((resolve, reject) => {
      const waiters = waiting.keys.get(key);
      if (waiters) waiters.push({ resolve, reject });
      else waiting.keys.set(key, [{ resolve, reject }]);
      schedule(ex, waiting);
    });
  };
}

/** A libSQL database itself, not one of its transactions (which have no driver). */
function isLibsqlDb(ex: Executor): ex is Db {
  return (ex as Partial<Db>).driver === "libsql";
}
