// Migration 8 (schema.sql "any git repository") on a database that already holds integrations,
// repositories, projects and deliveries: the tables are rebuilt with the wider CHECKs, every row
// and reference survives, and the foreign keys still act.
import { expect, test } from "bun:test";
import { databasePerTest, seedBeforeMigration } from "../../helpers/migrations.ts";
import { MIGRATIONS, migrate } from "../../../lib/db/migrate.ts";

const t = databasePerTest("roost-migrate8-");

test("migration 8 keeps integrations, repositories, projects and deliveries, and allows gitea and git", async () => {
  await seedBeforeMigration(t.db, 8, [
    "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('i1', 'gitlab', 'GitLab', 'https://gl', 'https://gl', 'sealed', 1, 1)",
    "INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, host_url, clone_url, created_at, updated_at, webhook_token_hash) VALUES ('r1', 'i1', 'gitlab', '15', 'mike/diaspora', 'main', 'https://gl', 'https://gl/x.git', 1, 1, 'h')",
    "INSERT INTO projects (id, name, repository_id, default_branch, created_at, updated_at) VALUES ('p1', 'diaspora', 'r1', 'main', 1, 1)",
    "INSERT INTO webhook_deliveries (id, host, verified, result, reason, repository_id, project_id, received_at) VALUES ('d1', 'gitlab', 1, 'ignored', 'why', 'r1', 'p1', 1)",
  ]);
  await expect(
    t.db.execute(
      "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('x', 'gitea', 'x', 'x', 'x', 'x', 1, 1)",
    ),
  ).rejects.toThrow(/CHECK/);

  expect(await migrate(t.db, () => 2)).toEqual({ from: 7, to: MIGRATIONS.length });

  expect((await t.db.execute("SELECT id, provider FROM integrations")).rows.map((r) => [r.id, r.provider])).toEqual([["i1", "gitlab"]]);
  expect((await t.db.execute("SELECT id, full_name, webhook_token_hash FROM repositories")).rows.map((r) => [r.id, r.full_name, r.webhook_token_hash])).toEqual(
    [["r1", "mike/diaspora", "h"]],
  );
  expect((await t.db.execute("SELECT repository_id FROM projects")).rows.map((r) => r.repository_id)).toEqual(["r1"]);
  expect((await t.db.execute("SELECT id, reason FROM webhook_deliveries")).rows.map((r) => [r.id, r.reason])).toEqual([["d1", "why"]]);
  expect((await t.db.execute("PRAGMA foreign_key_check")).rows).toEqual([]);

  await t.db.execute(
    "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('i2', 'gitea', 'Forgejo', 'https://fj', 'https://fj', 's', 1, 1)",
  );
  await t.db.execute(
    "INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, host_url, created_at, updated_at) VALUES ('r2', 'i2', 'git', 'i2', 'team/app', 'main', 'x', 1, 1)",
  );
  await t.db.execute("INSERT INTO webhook_deliveries (id, host, verified, result, reason, received_at) VALUES ('d2', 'git', 1, 'built', 'ok', 1)");
  // 'bitbucket' is allowed from migration 16 on (tests/lib/db/migrate-bitbucket.test.ts).
  // The foreign keys still act: a project cannot name a missing repository, and deleting an integration takes its repositories.
  await expect(
    t.db.execute("INSERT INTO projects (id, name, repository_id, default_branch, created_at, updated_at) VALUES ('p2', 'x', 'nope', 'main', 1, 1)"),
  ).rejects.toThrow(/FOREIGN KEY/);
  await t.db.execute("DELETE FROM integrations WHERE id = 'i2'");
  expect((await t.db.execute("SELECT id FROM repositories ORDER BY id")).rows.map((r) => r.id)).toEqual(["r1"]);
});
