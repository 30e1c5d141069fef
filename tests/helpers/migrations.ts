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

/** A migration test's first half: the migrations before `version` applied, then `rows` (INSERT statements) run in order on the database they made. */
export async function seedBeforeMigration(db: Db, version: number, rows: string[]): Promise<void> {
  await migrateTo(db, version - 1);
  for (const sql of rows) await db.execute(sql);
}

/** The rows a migration test hangs its own on: integration `i<n>` on `provider`, its repository `r<n>` (src/app), project `p<n>` (app) and that project's pipeline `pl<n>` (ci). */
export function projectRows(n = 1, provider = "git"): string[] {
  return [
    `INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('i${n}', '${provider}', 'app', '/src/app', '/src/app', 'sealed', 1, 1)`,
    `INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, host_url, clone_url, created_at, updated_at) VALUES ('r${n}', 'i${n}', '${provider}', 'i${n}', 'src/app', 'main', '/src/app', '/src/app', 1, 1)`,
    `INSERT INTO projects (id, name, repository_id, default_branch, created_at, updated_at) VALUES ('p${n}', 'app', 'r${n}', 'main', 1, 1)`,
    `INSERT INTO pipelines (id, project_id, name, config_path, trigger_config, execution_config, created_at, updated_at) VALUES ('pl${n}', 'p${n}', 'ci', 'roost.yaml', '{}', '{}', 1, 1)`,
  ];
}
