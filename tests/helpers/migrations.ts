// For the migration tests (tests/lib/migrate*.test.ts): a database file of its own for each test,
// and the migrations up to a version applied the way lib/db/migrate.ts applies them, so the
// migration under test meets a database made before it.
import { afterEach, beforeEach } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inTransaction, openDatabase, type Db } from "../../lib/db/client.ts";
import { MIGRATIONS } from "../../lib/db/migrate.ts";

export interface TempDatabase {
  db: Db;
  /** The directory that holds roost.db, for a second connection to the same file. */
  dir: string;
}

/** Opens roost.db in a fresh temporary directory before each test, and removes both after it. */
export function databasePerTest(prefix: string): TempDatabase {
  const t = {} as TempDatabase;
  beforeEach(async () => {
    t.dir = mkdtempSync(join(tmpdir(), prefix));
    t.db = await openDatabase(`file:${join(t.dir, "roost.db")}`);
  });
  afterEach(() => {
    t.db.close();
    rmSync(t.dir, { recursive: true, force: true });
  });
  return t;
}

/** Applies the migrations after the database's version up to `version`, each in its own transaction, recorded in schema_migrations. */
export async function migrateTo(db: Db, version: number): Promise<void> {
  await db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
  const applied = Number((await db.execute("SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations")).rows[0]?.v ?? 0);
  for (const m of MIGRATIONS.filter((m) => m.version > applied && m.version <= version)) {
    await inTransaction(db, async (tx) => {
      for (const s of m.sql
        .split(/;\s*$/m)
        .map((s) => s.replace(/^\s*--.*$/gm, "").trim())
        .filter((s) => s))
        await tx.execute(s);
      await tx.execute({ sql: "INSERT INTO schema_migrations VALUES (?, ?, 1)", args: [m.version, m.name] });
    });
  }
}
