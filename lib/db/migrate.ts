// Versioned migrations from schema.sql, applied at start-up (and by `roost migrate`).
// The pending blocks run in one write transaction that re-checks each block's version first, so
// two processes starting together apply each block exactly once.
import schemaSql from "../../schema.sql" with { type: "text" };
import type { Db } from "./client.ts";
import { inTransaction, one } from "./client.ts";
import { embeddedSchemaSnapshot } from "./schema-snapshot.ts";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function parseMigrations(text: string): Migration[] {
  const migrations: Migration[] = [];
  const marker = /^-- migration (\d+): (.+)$/gm;
  const found = [...text.matchAll(marker)];
  found.forEach((match, i) => {
    const start = match.index! + match[0].length;
    const end = i + 1 < found.length ? found[i + 1]!.index! : text.length;
    migrations.push({ version: Number(match[1]), name: match[2]!.trim(), sql: text.slice(start, end) });
  });
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`schema.sql: migration ${m.version} is out of order (expected ${i + 1})`);
  });
  return migrations;
}

export const MIGRATIONS = parseMigrations(schemaSql);
export const LATEST_SCHEMA_VERSION = MIGRATIONS.length;

/** Splits a block into statements; schema.sql keeps one statement per `;`-terminated line group and no `;` inside literals. */
export function statements(sql: string): string[] {
  return sql
    .split(/;\s*$/m)
    .map((s) => s.replace(/^\s*--.*$/gm, "").trim())
    .filter((s) => s.length > 0);
}

export async function appliedVersion(db: Db): Promise<number> {
  const table = await one(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'");
  if (!table) return 0;
  const row = await one(db, "SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations");
  return Number(row?.v ?? 0);
}

export async function migrate(db: Db, now: () => number): Promise<{ from: number; to: number }> {
  await db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
  const from = await appliedVersion(db);
  if (from > LATEST_SCHEMA_VERSION) {
    throw new Error(`The database is at schema version ${from}, newer than this roost (${LATEST_SCHEMA_VERSION}); upgrade roost.`);
  }
  // An up-to-date database (every start but the first after an upgrade) needs no write
  // transaction at all: sixteen-plus empty commits, each with an fsync, were most of a start.
  const applied = await one(db, "SELECT COUNT(*) AS n FROM schema_migrations WHERE version <= ?", [LATEST_SCHEMA_VERSION]);
  if (Number(applied?.n) === LATEST_SCHEMA_VERSION) return { from, to: from };
  // Every pending migration in one transaction: one commit (one fsync) for a new database's
  // whole schema instead of one per migration, and an upgrade is applied whole or not at all.
  await inTransaction(db, async (tx) => {
    // A new database takes the compiled binary's snapshot of the whole schema (lib/db/schema-snapshot.ts)
    // instead of replaying every migration; re-checked here, so of two processes starting on one
    // empty database only the first does.
    const snapshot = embeddedSchemaSnapshot();
    if (snapshot?.version === LATEST_SCHEMA_VERSION && !(await one(tx, "SELECT 1 FROM schema_migrations LIMIT 1"))) {
      for (const statement of snapshot.statements) await tx.execute(statement);
      await tx.execute({
        sql: `INSERT INTO schema_migrations (version, name, applied_at) VALUES ${MIGRATIONS.map(() => "(?, ?, ?)").join(", ")}`,
        args: MIGRATIONS.flatMap((m) => [m.version, m.name, now()]),
      });
      return;
    }
    for (const migration of MIGRATIONS) {
      const done = await one(tx, "SELECT 1 FROM schema_migrations WHERE version = ?", [migration.version]);
      if (done) continue;
      for (const statement of statements(migration.sql)) await tx.execute(statement);
      await tx.execute({
        sql: "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
        args: [migration.version, migration.name, now()],
      });
    }
  });
  return { from, to: LATEST_SCHEMA_VERSION };
}
