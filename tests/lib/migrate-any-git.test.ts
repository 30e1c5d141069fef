// Migration 8 (schema.sql "any git repository") on a database that already holds integrations,
// repositories, projects and deliveries: the tables are rebuilt with the wider CHECKs, every row
// and reference survives, and the foreign keys still act.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inTransaction, openDatabase, type Db } from "../../lib/db/client.ts";
import { MIGRATIONS, migrate } from "../../lib/db/migrate.ts";

let dir: string;
let db: Db;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-migrate8-"));
  db = await openDatabase(`file:${join(dir, "roost.db")}`);
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Applies migrations 1..7 the way migrate() does, so migration 8 meets a database made before it. */
async function migrateTo7(): Promise<void> {
  await db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
  for (const m of MIGRATIONS.filter((m) => m.version <= 7)) {
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

test("migration 8 keeps integrations, repositories, projects and deliveries, and allows gitea and git", async () => {
  await migrateTo7();
  await db.execute(
    "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('i1', 'gitlab', 'GitLab', 'https://gl', 'https://gl', 'sealed', 1, 1)",
  );
  await db.execute(
    "INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, host_url, clone_url, created_at, updated_at, webhook_token_hash) VALUES ('r1', 'i1', 'gitlab', '15', 'mike/diaspora', 'main', 'https://gl', 'https://gl/x.git', 1, 1, 'h')",
  );
  await db.execute("INSERT INTO projects (id, name, repository_id, default_branch, created_at, updated_at) VALUES ('p1', 'diaspora', 'r1', 'main', 1, 1)");
  await db.execute(
    "INSERT INTO webhook_deliveries (id, host, verified, result, reason, repository_id, project_id, received_at) VALUES ('d1', 'gitlab', 1, 'ignored', 'why', 'r1', 'p1', 1)",
  );
  await expect(
    db.execute(
      "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('x', 'gitea', 'x', 'x', 'x', 'x', 1, 1)",
    ),
  ).rejects.toThrow(/CHECK/);

  expect(await migrate(db, () => 2)).toEqual({ from: 7, to: MIGRATIONS.length });

  expect((await db.execute("SELECT id, provider FROM integrations")).rows.map((r) => [r.id, r.provider])).toEqual([["i1", "gitlab"]]);
  expect((await db.execute("SELECT id, full_name, webhook_token_hash FROM repositories")).rows.map((r) => [r.id, r.full_name, r.webhook_token_hash])).toEqual([
    ["r1", "mike/diaspora", "h"],
  ]);
  expect((await db.execute("SELECT repository_id FROM projects")).rows.map((r) => r.repository_id)).toEqual(["r1"]);
  expect((await db.execute("SELECT id, reason FROM webhook_deliveries")).rows.map((r) => [r.id, r.reason])).toEqual([["d1", "why"]]);
  expect((await db.execute("PRAGMA foreign_key_check")).rows).toEqual([]);

  await db.execute(
    "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('i2', 'gitea', 'Forgejo', 'https://fj', 'https://fj', 's', 1, 1)",
  );
  await db.execute(
    "INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, host_url, created_at, updated_at) VALUES ('r2', 'i2', 'git', 'i2', 'team/app', 'main', 'x', 1, 1)",
  );
  await db.execute("INSERT INTO webhook_deliveries (id, host, verified, result, reason, received_at) VALUES ('d2', 'git', 1, 'built', 'ok', 1)");
  // 'bitbucket' is allowed from migration 16 on (tests/lib/migrate-bitbucket.test.ts).
  // The foreign keys still act: a project cannot name a missing repository, and deleting an integration takes its repositories.
  await expect(
    db.execute("INSERT INTO projects (id, name, repository_id, default_branch, created_at, updated_at) VALUES ('p2', 'x', 'nope', 'main', 1, 1)"),
  ).rejects.toThrow(/FOREIGN KEY/);
  await db.execute("DELETE FROM integrations WHERE id = 'i2'");
  expect((await db.execute("SELECT id FROM repositories ORDER BY id")).rows.map((r) => r.id)).toEqual(["r1"]);
});
