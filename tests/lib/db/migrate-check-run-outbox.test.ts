// Migration 47 (schema.sql, check runs from an outbox of the due ones) on a database made before
// it: check runs already sent stay done, failed ones keep their attempts and retry time, the last
// day's finished GitHub builds with test results not yet reported are due, and builds on other
// forges, without results or still running get none. After it, the triggers make a build's row
// due whichever comes last, its finish or its first results.
import { expect, test } from "bun:test";
import { databasePerTest, projectRows, seedBeforeMigration } from "../../helpers/migrations.ts";
import { all } from "../../../lib/db/client.ts";
import { migrate } from "../../../lib/db/migrate.ts";

const t = databasePerTest("roost-migrate47-");
const DAY = 86400;
/** This migration's number in schema.sql. */
const VERSION = 47;

const build = (id: string, project: string, n: number, status: string, updatedAt: number) =>
  `INSERT INTO builds (id, project_id, pipeline_id, build_number, branch, commit_sha, config_snapshot, status, trigger_type, queued_at, created_at, updated_at)
   VALUES ('${id}', 'p${project}', 'pl${project}', ${n}, 'main', 'sha${n}', '{}', '${status}', 'manual', 1, 1, ${updatedAt})`;
const results = (id: string, project: string, n: number) =>
  `INSERT INTO build_test_summaries (build_id, pipeline_id, lane, commit_sha, build_number, updated_at) VALUES ('${id}', 'pl${project}', 'main', 'sha${n}', ${n}, 1)`;
const due = () => all(t.db, "SELECT build_id, done, attempts, next_attempt_at, finished_at FROM check_run_reports ORDER BY build_id");

test("sent check runs stay done; the last day's unreported GitHub builds with results are due; others get none", async () => {
  await seedBeforeMigration(t.db, VERSION, [
    ...projectRows(1, "github"),
    ...projectRows(2, "gitlab"),
    build("old", "1", 1, "failed", 100), // more than a day before the newest change
    results("old", "1", 1),
    build("sent", "1", 2, "succeeded", 2 * DAY),
    results("sent", "1", 2),
    build("retrying", "1", 3, "failed", 2 * DAY),
    results("retrying", "1", 3),
    build("new", "1", 4, "canceled", 2 * DAY + 5),
    results("new", "1", 4),
    build("no-results", "1", 5, "failed", 2 * DAY),
    build("running", "1", 6, "running", 2 * DAY),
    results("running", "1", 6),
    build("gitlab", "2", 1, "failed", 2 * DAY),
    results("gitlab", "2", 1),
    `INSERT INTO check_run_reports (build_id, check_run_id, done, attempts, next_attempt_at, updated_at) VALUES ('sent', '7', 1, 0, 0, 1), ('retrying', NULL, 0, 2, 99, 1)`,
  ]);

  await migrate(t.db, () => 2 * DAY);

  expect(await due()).toEqual([
    { build_id: "new", done: 0, attempts: 0, next_attempt_at: 0, finished_at: 2 * DAY + 5 },
    { build_id: "retrying", done: 0, attempts: 2, next_attempt_at: 99, finished_at: 2 * DAY },
    { build_id: "sent", done: 1, attempts: 0, next_attempt_at: 0, finished_at: 2 * DAY },
  ]);
});

test("after it, a build's check run is due when it finishes with results, or gets results finished", async () => {
  await seedBeforeMigration(t.db, VERSION + 1, [
    ...projectRows(1, "github"),
    ...projectRows(2, "gitlab"),
    build("finishes", "1", 1, "running", 10),
    results("finishes", "1", 1),
    build("results-last", "1", 2, "failed", 20),
    build("gitlab", "2", 1, "running", 10),
    results("gitlab", "2", 1),
  ]);
  expect(await due()).toEqual([]);
  await t.db.execute("UPDATE builds SET status = 'succeeded', updated_at = 30 WHERE id IN ('finishes', 'gitlab')");
  await t.db.execute(results("results-last", "1", 2));
  expect(await due()).toEqual([
    { build_id: "finishes", done: 0, attempts: 0, next_attempt_at: 0, finished_at: 30 },
    { build_id: "results-last", done: 0, attempts: 0, next_attempt_at: 0, finished_at: 20 },
  ]);
});
