// A local database file through Bun's built-in SQLite (https://bun.sh/docs/api/sqlite): no native
// addon to ship, so the compiled binary needs no build plugin, and db.query() keeps each
// statement compiled between calls.
//
// Two connections per database:
//   - the writer, used only by the write queue (lib/db/write-queue.ts): every write, batch and
//     transaction, grouped into shared commits;
//   - the reader, for reads outside transactions: in WAL mode it never waits for the writer and
//     sees only committed data.
// Both set busy_timeout = 0, so no call ever sleeps inside SQLite; a busy database (another
// process writing) is retried on a timer instead (retryBusy in lib/db/database.ts).
import { constants, Database, type Statement } from "bun:sqlite";
import { isBusy, isRead, retryBusy, type Db, type NormalizedStatement, type ResultSet, type Row } from "./database.ts";
import { WriteQueue, queuedDb, type WriteSession } from "./write-queue.ts";

/**
 * Per-connection settings, on every connection: no sleeping busy handler; WAL (readers beside one
 * writer; persistent in the file, set again harmlessly); commits synced before they are
 * acknowledged (an acknowledged write survives a power loss); foreign keys enforced.
 * auto_vacuum = INCREMENTAL takes effect only on a new file (before its first table), so that
 * retention can give freed pages back to the file system (lib/retention/retention.ts); on an existing
 * file it changes nothing.
 * https://www.sqlite.org/pragma.html
 */
/** Statements remembered per connection (bun:sqlite's own cache of db.query() holds more). */
const MAX_PREPARED = 1000;

const CONNECTION_SETTINGS =
  "PRAGMA auto_vacuum = INCREMENTAL; PRAGMA busy_timeout = 0; PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;";

/**
 * The writer's own: its temporary files in memory. A statement that fires triggers (a build's
 * status change: the queue and count triggers of schema.sql) keeps a statement journal of the
 * pages it changes, so that it can be undone alone; past 64 KiB that journal goes to a temporary
 * file, and a status change touching a dozen indexes of builds gets there on every call: about
 * half its CPU time (docs/benchmarks.md, "The runner fleet"). In memory it is freed at the
 * statement's end. The reader keeps files for the large sorts of list queries.
 * And a page cache of up to 32 MiB, where SQLite's default is 2 MiB: the writer's cache outlives
 * its commits (a reader's is dropped whenever another connection has written), and each new build
 * lands in a dozen indexes of builds, spread by branch, beside the delivery's and its outbox rows,
 * more pages than 2 MiB holds, so most writes read their pages from the file again: a webhook push
 * took about 9 % more CPU (docs/benchmarks.md, "Webhook pushes: CPU per build").
 * And the WAL checkpointed by the writer's commits once it holds 10,000 pages (about 40 MiB), where
 * SQLite's default is 1,000: a checkpoint copies each page changed since the last one to the
 * database file once, and the pages a burst of builds changes (the same index leaves, again and
 * again) are copied once per 10,000 written instead of once per 1,000. A webhook push took 8-15 %
 * less of the daemon's CPU (docs/benchmarks.md, "Webhook pushes: a push's CPU by statement, index
 * and thread"). The checkpoint runs in the commit that crosses the mark, on the event loop: 16-35 ms
 * for 10,000 pages here against 4-12 ms for 1,000, ten times less often. Durability is unchanged:
 * every commit's frames are synced to the WAL (synchronous = FULL) before it is answered.
 * https://www.sqlite.org/tempfiles.html#stmtjrnl, https://www.sqlite.org/pragma.html#pragma_temp_store,
 * https://www.sqlite.org/pragma.html#pragma_cache_size, https://www.sqlite.org/wal.html#ckpt
 */
const WRITER_SETTINGS = "PRAGMA temp_store = MEMORY; PRAGMA cache_size = -32768; PRAGMA wal_autocheckpoint = 10000;";

/** A statement compiled once, with what run() asks of it on every call. */
interface Prepared {
  statement: Statement;
  /** Its result columns (bun:sqlite builds the array anew on every read of columnNames). */
  columns: string[];
  read: boolean;
}

class Connection {
  readonly native: Database;
  /** By SQL text; db.query() keeps the compiled statement too, but its columns and kind were asked for on every call. */
  readonly #prepared = new Map<string, Prepared>();

  constructor(path: string) {
    // strict: named arguments are bound without their prefix, and a missing one is an error.
    this.native = new Database(path, { create: true, strict: true });
  }

  #prepare(sql: string): Prepared {
    let prepared = this.#prepared.get(sql);
    if (prepared === undefined) {
      const statement = this.native.query(sql);
      prepared = { statement, columns: statement.columnNames, read: isRead(sql) };
      // Statements are literals of the code, few; a caller building SQL from data (IN lists of
      // any length) must not grow this without bound.
      if (this.#prepared.size >= MAX_PREPARED) this.#prepared.clear();
      this.#prepared.set(sql, prepared);
    }
    return prepared;
  }

  async configure(extra = ""): Promise<void> {
    // journal_mode needs a lock another process may hold for a moment.
    await retryBusy(() => this.native.exec(CONNECTION_SETTINGS + extra));
  }

  run({ sql, args }: NormalizedStatement): ResultSet {
    const { statement, columns, read } = this.#prepare(sql);
    const params = (Array.isArray(args) ? args : [args]) as never[];
    if (columns.length > 0) {
      const rows = statement.all(...params) as Row[];
      // INSERT ... RETURNING and the like still report what they changed.
      const rowsAffected = read ? 0 : Number((this.native.query("SELECT changes() AS n").get() as { n: number }).n);
      return { columns, rows, rowsAffected, lastInsertRowid: undefined };
    }
    const info = statement.run(...params);
    return { columns: [], rows: [], rowsAffected: info.changes, lastInsertRowid: info.lastInsertRowid };
  }

  /** PRAGMA data_version, by a statement compiled once (Db.readVersion). */
  #dataVersion: Statement | null = null;

  /**
   * The data version now: `PRAGMA data_version` begins a read, which brings the pager's version up
   * to date, and the version is then read from the pager as lastDataVersion() reads it, so the two
   * count alike. (The pragma's own figure leaves out the connection's own commits, and counts one
   * the reader made while it was set up: it is not the pager's.)
   */
  dataVersion(): number {
    this.#dataVersion ??= this.native.prepare("PRAGMA data_version");
    this.#dataVersion.values();
    return this.lastDataVersion();
  }

  /** Where SQLite writes the pager's data version (an unsigned int; bun:sqlite wants 8 bytes at least). */
  readonly #versionOut = new Uint32Array(2);

  /**
   * The data version the connection's last read transaction saw, from its pager, without a
   * statement or a lock (Db.lastRead). On a connection that never writes it is what
   * `PRAGMA data_version` answered then: the pragma adds only the connection's own commits.
   */
  lastDataVersion(): number {
    this.native.fileControl(constants.SQLITE_FCNTL_DATA_VERSION, this.#versionOut);
    return this.#versionOut[0]!;
  }

  pragma(name: string): unknown {
    const row = this.native.query(`PRAGMA ${name.replace(/[^a-z_]/g, "")}`).values()[0];
    return row?.[0];
  }

  close(): void {
    this.native.close(false);
  }
}

export interface BunSqliteDb extends Db {
  /** A pragma's value on both connections (tests check the per-connection settings). */
  pragma(name: string): { reader: unknown; writer: unknown };
}

export async function openBunSqlite(path: string): Promise<BunSqliteDb> {
  const writer = new Connection(path);
  const reader = new Connection(path);
  try {
    await writer.configure(WRITER_SETTINGS);
    await reader.configure();
  } catch (error) {
    writer.close();
    reader.close();
    throw error;
  }

  const session: WriteSession = {
    execute: (stmt) => writer.run(stmt),
    batch: (stmts) => stmts.map((stmt) => writer.run(stmt)),
    later: (stmt) => void writer.run(stmt),
    commit: () => void writer.native.exec("COMMIT"),
    rollback: () => {
      if (writer.native.inTransaction) writer.native.exec("ROLLBACK");
    },
  };
  const queue = new WriteQueue({
    begin: () => {
      writer.native.exec("BEGIN IMMEDIATE");
      return session;
    },
    alone: (stmt) => writer.run(stmt),
  });

  /** Statements the reader has completed (Db.lastRead), counted once each has read. */
  let reads = 0;
  const readCounted = (stmt: NormalizedStatement): ResultSet => {
    const result = reader.run(stmt);
    reads++;
    return result;
  };
  const read = (stmt: NormalizedStatement): ResultSet | Promise<ResultSet> => {
    try {
      return readCounted(stmt);
    } catch (error) {
      // A reader waits only while another process recovers or checkpoints the WAL.
      if (!isBusy(error)) throw error;
      return retryBusy(() => readCounted(stmt));
    }
  };

  const db = queuedDb("bun:sqlite", queue, read, () => {
    writer.close();
    reader.close();
  });
  return Object.assign(db, {
    pragma(name: string) {
      return { reader: reader.pragma(name), writer: writer.pragma(name) };
    },
    readVersion(): number | null {
      try {
        return reader.dataVersion();
      } catch (error) {
        // Busy (another process recovering or checkpointing the WAL): unknown, so nothing remembered is trusted.
        if (isBusy(error)) return null;
        throw error;
      }
    },
    lastRead(): { reads: number; version: number } {
      return { reads, version: reader.lastDataVersion() };
    },
  });
}
