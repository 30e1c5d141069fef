// Migration 28 (schema.sql "the forge's name is the registry's to check") on a populated database
// made before it: integrations, repositories and deliveries are rebuilt without the CHECK that
// listed the forges, and every row, index and foreign key survives, with the git_polls rows that
// dropping `repositories` cascades into, and the triggers on builds that read `repositories`.
// Afterwards a forge Roost does not know yet needs no rebuild; which names exist is
// lib/forges/registry.ts's to say.
import { expect, test } from "bun:test";
import { all } from "../../../lib/db/client.ts";
import { MIGRATIONS } from "../../../lib/db/migrate.ts";
import { databasePerTest, migrateTo, projectRows, seedBeforeMigration } from "../../helpers/migrations.ts";

const VERSION = MIGRATIONS.findIndex((m) => m.name === "the forge's name is the registry's to check") + 1;

const t = databasePerTest("roost-migrate-forges-");

const TABLES = ["integrations", "repositories", "webhook_deliveries", "git_polls", "projects"];
const rowsOf = async () =>
  Object.fromEntries(await Promise.all(TABLES.map(async (table) => [table, await all(t.db, `SELECT * FROM ${table} ORDER BY rowid`)] as const)));
const schemaOf = async (type: string) =>
  (
    await all(
      t.db,
      "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = ? AND tbl_name IN ('integrations', 'repositories', 'webhook_deliveries') ORDER BY name",
      [type],
    )
  ).map((r) => r.name);

test("the tables lose only the CHECK that listed the forges: rows, indexes, foreign keys and triggers stay", async () => {
  expect(VERSION).toBeGreaterThan(25);
  // A GitHub integration and repository with every column filled, so that each is seen to survive the rebuild.
  await seedBeforeMigration(t.db, VERSION, [
    "INSERT INTO integrations (id, provider, name, api_url, web_url, app_id, installation_id, credentials_sealed, created_at, updated_at, last_synced_at, last_sync_error) VALUES ('i1', 'github', 'gh', 'https://api.github.com', 'https://github.com', '42', '7', 'sealed', 1, 2, 3, 'HTTP 401')",
    "INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, is_private, avatar_url, installation_id, host_url, clone_url, created_at, updated_at, webhook_token_hash) VALUES ('r1', 'i1', 'github', '1296269', 'octocat/hello', 'main', 0, 'https://a/x.png', '7', 'https://github.com', 'https://github.com/octocat/hello.git', 1, 2, 'h')",
    "INSERT INTO projects (id, name, repository_id, default_branch, created_at, updated_at) VALUES ('p1', 'hello', 'r1', 'main', 1, 1)",
    "INSERT INTO pipelines (id, project_id, name, config_path, trigger_config, execution_config, created_at, updated_at) VALUES ('pl1', 'p1', 'ci', 'roost.yaml', '{}', '{}', 1, 1)",
    ...projectRows(2, "git"),
    `INSERT INTO git_polls (repository_id, heads, next_poll_at, lease_owner, lease_until, failures, last_error, last_polled_at) VALUES ('r2', '{"refs/heads/main":"abc"}', 42, 'me', 40, 2, 'gone', 39)`,
    "INSERT INTO webhook_deliveries (id, host, delivery_id, event, action, verified, result, reason, repository_external_id, repository_full_name, repository_id, project_id, commit_sha, decisions, body, received_at, body_expires_at) VALUES ('d1', 'github', 'g-1', 'push', '', 1, 'failed', 'why', '1296269', 'octocat/hello', 'r1', 'p1', 'abc', '[]', '{}', 5, 6)",
    "INSERT INTO webhook_deliveries (id, host, verified, result, reason, received_at) VALUES ('d2', 'git', 0, 'rejected', 'no signature', 7)",
  ]);
  const before = await rowsOf();
  const indexes = await schemaOf("index");
  await expect(
    t.db.execute(
      "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('i3', 'forgejo-next', 'x', 'x', 'x', 'x', 1, 1)",
    ),
  ).rejects.toThrow(/CHECK/);

  // This migration alone: the triggers it keeps are dropped later (migration 31, lib/builds/what-follows.ts).
  await migrateTo(t.db, VERSION);

  // Every row and index is back, the copies are gone, and every foreign key holds.
  expect(await rowsOf()).toEqual(before);
  expect(await schemaOf("index")).toEqual(indexes);
  expect(indexes).toEqual(
    expect.arrayContaining([
      "repositories_external",
      "repositories_full_name",
      "webhook_deliveries_project",
      "webhook_deliveries_received",
      "webhook_deliveries_rejected",
    ]),
  );
  expect(await all(t.db, "SELECT name FROM sqlite_master WHERE name LIKE '%_copy'")).toEqual([]);
  expect(await all(t.db, "PRAGMA foreign_key_check")).toEqual([]);
  const tables = (await all(t.db, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name IN ('integrations', 'repositories', 'webhook_deliveries')")).map(
    (r) => String(r.sql),
  );
  expect(tables.filter((sql) => /provider IN|host IN/.test(sql))).toEqual([]);

  // A delivery's result is still checked, and a project cannot name a missing repository.
  await expect(
    t.db.execute("INSERT INTO webhook_deliveries (id, host, verified, result, reason, received_at) VALUES ('d4', 'github', 1, 'bogus', 'x', 8)"),
  ).rejects.toThrow(/CHECK/);
  await expect(
    t.db.execute("INSERT INTO projects (id, name, repository_id, default_branch, created_at, updated_at) VALUES ('p3', 'x', 'nope', 'main', 1, 1)"),
  ).rejects.toThrow(/FOREIGN KEY/);

  // A forge this Roost does not list is stored without a rebuild; deleting its integration takes
  // its repositories and their polls, and leaves everything from before.
  for (const sql of [
    "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('i3', 'forgejo-next', 'x', 'https://fj', 'https://fj', 'x', 1, 1)",
    "INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, host_url, created_at, updated_at) VALUES ('r3', 'i3', 'forgejo-next', '9', 'team/app', 'main', 'https://fj', 1, 1)",
    "INSERT INTO webhook_deliveries (id, host, verified, result, reason, received_at) VALUES ('d3', 'forgejo-next', 1, 'built', 'ok', 8)",
    "INSERT INTO git_polls (repository_id) VALUES ('r3')",
  ])
    await t.db.execute(sql);
  await t.db.execute("DELETE FROM integrations WHERE id = 'i3'");
  expect(await rowsOf()).toEqual({
    ...before,
    webhook_deliveries: [...before.webhook_deliveries!, expect.objectContaining({ id: "d3", host: "forgejo-next" })],
  });

  // The triggers on builds that read repositories find the new table: a GitHub build is owed a commit status.
  await t.db.execute(
    "INSERT INTO builds (id, project_id, pipeline_id, build_number, branch, commit_sha, config_snapshot, status, trigger_type, queued_at, created_at, updated_at) VALUES ('b1', 'p1', 'pl1', 1, 'main', 'abc', '{}', 'queued', 'manual', 1, 1, 1)",
  );
  expect(await all(t.db, "SELECT repository_id, build_id, status FROM commit_status_outbox")).toEqual([
    { repository_id: "r1", build_id: "b1", status: "queued" },
  ]);
});
