// Migration 16 (schema.sql "Bitbucket Cloud") on a database made before it: the integrations,
// repositories and deliveries tables are rebuilt with 'bitbucket' allowed, every row survives,
// including the git_polls rows that dropping `repositories` cascades into, and the foreign keys
// still act.
import { expect, test } from "bun:test";
import { databasePerTest, migrateTo, projectRows, seedBeforeMigration } from "../../helpers/migrations.ts";

const t = databasePerTest("roost-migrate16-");

test("migration 16 keeps integrations, repositories, git polls and deliveries, and allows bitbucket", async () => {
  await seedBeforeMigration(t.db, 16, [
    ...projectRows(),
    `INSERT INTO git_polls (repository_id, heads, next_poll_at, failures) VALUES ('r1', '{"refs/heads/main":"abc"}', 42, 2)`,
    "INSERT INTO webhook_deliveries (id, host, verified, result, reason, repository_id, project_id, received_at) VALUES ('d1', 'git', 1, 'built', 'why', 'r1', 'p1', 1)",
  ]);
  const bitbucket =
    "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('i2', 'bitbucket', 'Bitbucket', 'https://api.bitbucket.org/2.0', 'https://bitbucket.org/team', 's', 1, 1)";
  await expect(t.db.execute(bitbucket)).rejects.toThrow(/CHECK/);

  // Migration 16 alone: its CHECK is the one it widened (a later migration leaves the names to lib/forges/registry.ts).
  await migrateTo(t.db, 16);

  expect((await t.db.execute("SELECT id, provider FROM integrations")).rows.map((r) => [r.id, r.provider])).toEqual([["i1", "git"]]);
  expect((await t.db.execute("SELECT id, full_name FROM repositories")).rows.map((r) => [r.id, r.full_name])).toEqual([["r1", "src/app"]]);
  expect(
    (await t.db.execute("SELECT repository_id, heads, next_poll_at, failures FROM git_polls")).rows.map((r) => [
      r.repository_id,
      r.heads,
      r.next_poll_at,
      r.failures,
    ]),
  ).toEqual([["r1", '{"refs/heads/main":"abc"}', 42, 2]]);
  expect((await t.db.execute("SELECT id, reason FROM webhook_deliveries")).rows.map((r) => [r.id, r.reason])).toEqual([["d1", "why"]]);
  expect((await t.db.execute("SELECT name FROM sqlite_master WHERE name LIKE '%_copy'")).rows).toEqual([]);
  expect((await t.db.execute("PRAGMA foreign_key_check")).rows).toEqual([]);

  await t.db.execute(bitbucket);
  await t.db.execute(
    "INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, host_url, created_at, updated_at) VALUES ('r2', 'i2', 'bitbucket', '{673a6070-3421-46c9-9d48-90745f7bfe8e}', 'team/app', 'main', 'x', 1, 1)",
  );
  await t.db.execute("INSERT INTO webhook_deliveries (id, host, verified, result, reason, received_at) VALUES ('d2', 'bitbucket', 1, 'built', 'ok', 1)");
  await expect(
    t.db.execute(
      "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('y', 'bitbucket-server', 'x', 'x', 'x', 'x', 1, 1)",
    ),
  ).rejects.toThrow(/CHECK/);
  // The foreign keys still act: a project cannot name a missing repository, and deleting an
  // integration takes its repositories and their polls.
  await expect(
    t.db.execute("INSERT INTO projects (id, name, repository_id, default_branch, created_at, updated_at) VALUES ('p2', 'x', 'nope', 'main', 1, 1)"),
  ).rejects.toThrow(/FOREIGN KEY/);
  await t.db.execute("INSERT INTO git_polls (repository_id) VALUES ('r2')");
  await t.db.execute("DELETE FROM integrations WHERE id = 'i2'");
  expect((await t.db.execute("SELECT id FROM repositories")).rows.map((r) => r.id)).toEqual(["r1"]);
  expect((await t.db.execute("SELECT repository_id FROM git_polls")).rows.map((r) => r.repository_id)).toEqual(["r1"]);
});
