// Rows a request reads again and again (the credential of every authenticated request, with its
// user), remembered with the database's data version and answered from memory only while that
// version has not moved: SQLite changes it on the reader connection whenever any other connection
// (this process's writer, another daemon on the same file) has committed
// (https://www.sqlite.org/pragma.html#pragma_data_version). Checking it is one statement without a
// row to map, where the read it stands for is a join by primary key; what is remembered is never
// staler than what the reader would read, so a revocation, a logout or a deactivation by any daemon
// still answers the next request. Only a database that can tell its version (bun:sqlite, Db.readVersion);
// on a libSQL server and inside a transaction every call reads.
import type { Db, Executor } from "./database.ts";

/** Entries per database before the map is emptied: credentials in use at once, not a store of every one. */
const MAX_ENTRIES = 1000;

export class VerifiedReads<T> {
  /** By database: the version its values were read at, and how many commits this process had made before it was read. */
  readonly #byDb = new WeakMap<Executor, { version: number; commits: number; values: Map<string, T> }>();

  /**
   * The value `read` gives for `key`, or the one it gave before while the database has not changed
   * since; `read` answers null for a row that is not there, which is not remembered. The version
   * is taken before the read, so a commit while it runs makes the next call read again.
   */
  get(db: Executor, key: string, read: () => Promise<T | null>): T | null | Promise<T | null> {
    const commits = (db as Db).commits;
    const version = typeof (db as Db).readVersion === "function" ? (db as Db).readVersion!() : null;
    if (version === null) return read();
    let remembered = this.#byDb.get(db);
    if (remembered === undefined || remembered.version !== version) {
      remembered = { version, commits, values: new Map() };
      this.#byDb.set(db, remembered);
    }
    const hit = remembered.values.get(key);
    if (hit !== undefined) return hit;
    const values = remembered.values;
    return read().then((value) => {
      if (value !== null && this.#byDb.get(db) === remembered) {
        if (values.size >= MAX_ENTRIES) values.clear();
        values.set(key, value);
      }
      return value;
    });
  }

  /**
   * What get() remembers for `key`, without a statement that asks whether anything has been
   * committed since: only while this process has committed nothing since and the reader's last
   * read saw the same version (Db.commits, Db.lastRead, neither a statement), and even then another
   * process may have committed. So it comes with the version it was read at and the reader's
   * count of reads, for a caller that confirms it afterwards by the version its own reads saw
   * (lib/http/app.ts, an endpoint's `readOnly`), and does not use what it did with it otherwise.
   */
  remembered(db: Executor, key: string): { value: T; version: number; reads: number } | undefined {
    const remembered = this.#byDb.get(db);
    const value = remembered?.values.get(key);
    if (value === undefined || (db as Db).commits !== remembered!.commits) return undefined;
    const last = (db as Db).lastRead?.();
    if (last === undefined || last.version !== remembered!.version) return undefined;
    return { value, version: remembered!.version, reads: last.reads };
  }
}
