// Opening the database, and the small helpers every module reads and writes with.
// A `file:` URL (the default: <ROOST_DATA_DIR>/roost.db) opens through Bun's built-in SQLite
// (lib/db/bun-sqlite.ts); any other libSQL URL (sqld, Turso) through @libsql/client
// (lib/db/libsql.ts). Both sit behind Roost's own interface (lib/db/database.ts): WAL, so readers
// run beside one writer and two `roost serve` can share a file; this process's writers queue on
// promises and share commits; another process's write lock is waited out on a timer, never by
// sleeping inside SQLite.
import { openBunSqlite } from "./bun-sqlite.ts";
import type { Args, Db, Executor, Row, Transaction } from "./database.ts";
import { openLibsql } from "./libsql.ts";

export type { Args, Db, DriverName, Executor, ResultSet, Row, SqlCondition, Statement, Transaction, Value } from "./database.ts";
export { ALWAYS, allOf, BUSY_TIMEOUT_MS, isDatabaseUnreachable, isResponseTooLarge, marks, readInPieces } from "./database.ts";

/**
 * ROOST_DB_DRIVER=libsql opens `file:` URLs through @libsql/client too, the code path a remote
 * server uses; the test script runs the suite a second time with it. Not meant for production.
 */
export type DriverChoice = "bun:sqlite" | "libsql";

export function driverFromEnv(env: Record<string, string | undefined> = process.env): DriverChoice {
  const v = env.ROOST_DB_DRIVER;
  if (v === undefined || v === "" || v === "bun" || v === "bun:sqlite") return "bun:sqlite";
  if (v === "libsql") return "libsql";
  throw new Error(`ROOST_DB_DRIVER must be bun:sqlite or libsql, not ${JSON.stringify(v)}`);
}

/** `timeoutMs` bounds each request to a remote server (ROOST_DATABASE_TIMEOUT_MS, lib/db/libsql.ts). */
export async function openDatabase(url: string, authToken?: string, driver: DriverChoice = driverFromEnv(), timeoutMs?: number): Promise<Db> {
  const db = url.startsWith("file:") && driver === "bun:sqlite" ? await openBunSqlite(filePath(url)) : await openLibsql(url, authToken, timeoutMs);
  if (url.startsWith("file:")) {
    // Set on each connection by the driver; asserted here so a build that ignored it fails loudly.
    const fk = await db.execute("PRAGMA foreign_keys");
    if (Number(Object.values(fk.rows[0] ?? {})[0]) !== 1) {
      db.close();
      throw new Error("database connection opened without foreign key enforcement");
    }
  }
  return db;
}

/** file:/abs/path, file:///abs/path or file:relative → a filesystem path. */
export function filePath(url: string): string {
  const rest = url.slice("file:".length).split("?")[0]!;
  return rest.startsWith("///") ? rest.slice(2) : rest;
}

export async function one(db: Executor, sql: string, args: Args = []): Promise<Row | null> {
  const result = await db.execute({ sql, args });
  return result.rows[0] ?? null;
}

export async function all(db: Executor, sql: string, args: Args = []): Promise<Row[]> {
  return (await db.execute({ sql, args })).rows;
}

export async function run(db: Executor, sql: string, args: Args = []): Promise<number> {
  return (await db.execute({ sql, args })).rowsAffected;
}

/**
 * Runs `work` in one write transaction, answering after the commit that holds it (possibly shared
 * with other transactions started at the same time; a failure rolls back only this one's writes).
 * Inside `work`, write through `tx`: a write through `db` would wait for this very commit.
 */
export async function inTransaction<T>(db: Db, work: (tx: Transaction) => Promise<T>): Promise<T> {
  return db.transaction(work);
}

// Row readers: rows are loosely typed; these say what a column must hold.
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
/** A TEXT column holding JSON of type T (written by this program, so not validated again). */
export function json<T>(): ColumnReader<T> {
  return (row, column) => JSON.parse(str(row, column)) as T;
}
/** A TEXT column that holds one of the values of T (a CHECK constraint, or only this program writes it). */
export function strAs<T extends string>(): ColumnReader<T> {
  return (row, column) => str(row, column) as T;
}

/** Reads one column: the readers above, or a function of its own for a field made from more. */
export type ColumnReader<T> = (row: Row, column: string) => T;
type ColumnReaders = Record<string, ColumnReader<unknown>>;

/**
 * A row mapper from one reader per column, keyed by the column's name: a table's fields are
 * written once, and its type is the mapper's (`type Artifact = ReturnType<typeof toArtifact>`).
 */
export function rowMapper<R extends ColumnReaders>(readers: R): (row: Row) => { [K in keyof R]: ReturnType<R[K]> } {
  const columns = Object.entries(readers);
  return (row) => {
    const mapped: Record<string, unknown> = {};
    for (const [column, read] of columns) mapped[column] = read(row, column);
    return mapped as { [K in keyof R]: ReturnType<R[K]> };
  };
}

/** Whether a database error is a UNIQUE constraint violation (for a clean 409). */
export function isUniqueViolation(error: unknown): boolean {
  // bun:sqlite names the extended code in `code`; @libsql/client in `extendedCode`.
  const e = error as { extendedCode?: string; code?: string; message?: string } | null;
  const code = e?.extendedCode ?? e?.code;
  return code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY" || /UNIQUE constraint failed/.test(e?.message ?? "");
}

/** A case-insensitive substring pattern for `LIKE ? ESCAPE '\\'`, with %, _ and \\ in the search taken literally. */
export function likePattern(q: string): string {
  return `%${q.toLowerCase().replace(/[\\%_]/g, (c) => "\\" + c)}%`;
}
