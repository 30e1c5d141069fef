// Migration 24 (schema.sql, commit statuses as an outbox) on a database made before it: the
// statuses already reported stay reported, the others of the last day are due, one row per commit
// and pipeline holding its newest build, and plain git remotes get none.
import { expect, test } from "bun:test";
import { databasePerTest, projectRows, seedBeforeMigration } from "../../helpers/migrations.ts";
import { all } from "../../../lib/db/client.ts";
import { migrate } from "../../../lib/db/migrate.ts";

const t = databasePerTest("roost-migrate24-");

test("reported statuses stay reported; the rest of the last day is due, newest build per commit and pipeline", async () => {
  await seedBeforeMigration(t.db, 24, [...projectRows(1, "github"), ...projectRows(2, "git")]);
  const insert = (id: string, project: string, pipeline: string, n: number, sha: string, status: string, updatedAt: number) =>
    t.db.execute({
      sql: "INSERT INTO builds (id, project_id, pipeline_id, build_number, branch, commit_sha, config_snapshot, status, trigger_type, queued_at, created_at, updated_at) VALUES (?, ?, ?, ?, 'main', ?, '{}', ?, 'manual', 1, 1, ?)",
      args: [id, project, pipeline, n, sha, status, updatedAt],
    });
  const DAY = 86400;
  await insert("old", "p1", "pl1", 1, "aaa", "failed", 100); // more than a day before the newest change
  await insert("sent", "p1", "pl1", 2, "bbb", "succeeded", 2 * DAY);
  await insert("first", "p1", "pl1", 3, "ccc", "succeeded", 2 * DAY);
  await insert("rerun", "p1", "pl1", 4, "ccc", "running", 2 * DAY + 5);
  await insert("git", "p2", "pl2", 1, "ddd", "queued", 2 * DAY);
  await t.db.execute(
    "INSERT INTO commit_status_reports (build_id, reported_status, attempts, next_attempt_at, updated_at) VALUES ('sent', 'succeeded', 0, 0, 1), ('first', 'succeeded', 0, 0, 1), ('rerun', NULL, 2, 99, 1)",
  );

  await migrate(t.db, () => 2);

  expect(
    await all(t.db, "SELECT commit_sha, build_id, status, version, sent_version, attempts, next_attempt_at FROM commit_status_outbox ORDER BY commit_sha"),
  ).toEqual([
    { commit_sha: "bbb", build_id: "sent", status: "succeeded", version: 1, sent_version: 1, attempts: 0, next_attempt_at: 0 },
    { commit_sha: "ccc", build_id: "rerun", status: "running", version: 1, sent_version: 0, attempts: 2, next_attempt_at: 99 },
  ]);
  expect(await all(t.db, "SELECT name FROM sqlite_master WHERE name = 'commit_status_reports'")).toEqual([]);
});
