// Opening the database: an embedded libSQL file under ROOST_DATA_DIR by default, or any libSQL
// database named by ROOST_DATABASE_URL (sqld, Turso). Every process that opens the same file
// shares it safely: WAL lets readers run beside one writer, and the busy timeout makes a second
// process's writer wait instead of failing with SQLITE_BUSY (two `roost serve` on one file).
import { createClient, type Client, type InArgs, type Row, type Transaction } from "@libsql/client";
import { createEmbeddedClient } from "./embedded-client.ts";

export type Db = Client;
export type Executor = Client | Transaction;

export const BUSY_TIMEOUT_MS = 10_000;

export async function openDatabase(url: string, authToken?: string): Promise<Db> {
  // The embedded file goes through our Client with cached statements and in-process write
  // serialization (lib/db/embedded-client.ts); any other libSQL URL through @libsql/client.
  const db = url.startsWith("file:")
    ? createEmbeddedClient(filePath(url), BUSY_TIMEOUT_MS)
    : createClient({ url, authToken, timeout: BUSY_TIMEOUT_MS, intMode: "number" });
  if (url.startsWith("file:")) {
    // WAL, synchronous=FULL and foreign keys are set on each connection (lib/db/embedded-client.ts);
    // asserted here so a libSQL build that ignored them fails loudly.
    const fk = await db.execute("PRAGMA foreign_keys");
    if (Number(fk.rows[0]?.[0]) !== 1) throw new Error("libSQL connection opened without foreign key enforcement");
  }
  return db;
}

/** file:/abs/path, file:///abs/path or file:relative → a filesystem path. */
function filePath(url: string): string {
  const rest = url.slice("file:".length).split("?")[0]!;
  return rest.startsWith("///") ? rest.slice(2) : rest;
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

/** Whether a database error is a UNIQUE constraint violation (for a clean 409). */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { extendedCode?: string; code?: string; message?: string } | null;
  return e?.extendedCode === "SQLITE_CONSTRAINT_UNIQUE" || e?.extendedCode === "SQLITE_CONSTRAINT_PRIMARYKEY" || /UNIQUE constraint failed/.test(e?.message ?? "");
}

/** A case-insensitive substring pattern for `LIKE ? ESCAPE '\\'`, with %, _ and \\ in the search taken literally. */
export function likePattern(q: string): string {
  return `%${q.toLowerCase().replace(/[\\%_]/g, (c) => "\\" + c)}%`;
}
