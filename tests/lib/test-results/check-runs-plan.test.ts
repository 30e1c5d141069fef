// The check-run reporter's pass (lib/test-results/check-runs.ts) runs every 2 s on every daemon's
// event loop: it reads the check runs due, a range of the partial index check_run_reports_due
// (done = 0, schema.sql migration 47), and then the builds it claimed by their ids; never a range
// of builds (it read every build of the last day through builds_updated_at, 13.8 ms a pass at
// 4,000 builds). Asserted on SQLite's query plans (https://www.sqlite.org/eqp.html) of the
// statements the pass runs, on a database of many reported builds and a few due.
import { beforeAll, expect, test } from "bun:test";
import { migratedDatabasePerFile, plansOf } from "../../helpers/query-plans.ts";
import { reportCheckRuns } from "../../../lib/test-results/check-runs.ts";

const NOW = 1_800_000_000;
const t = migratedDatabasePerFile("roost-check-runs-plan-", NOW);

beforeAll(async () => {
  await t.db.execute(
    "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('i', 'github', 'gh', 'http://127.0.0.1:9', 'http://127.0.0.1:9', 'x', 1, 1)",
  );
  await t.db.execute(
    "INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, host_url, created_at, updated_at) VALUES ('r', 'i', 'github', '1', 'acme/app', 'main', 'http://127.0.0.1:9', 1, 1)",
  );
  await t.db.execute("INSERT INTO projects (id, name, repository_id, default_branch, created_at, updated_at) VALUES ('p', 'app', 'r', 'main', 1, 1)");
  await t.db.execute(
    `INSERT INTO pipelines (id, project_id, name, config_path, trigger_config, execution_config, created_at, updated_at) VALUES ('pl', 'p', 'android', 'roost.yaml', '{}', '{}', 1, 1)`,
  );
  // 2,000 builds finished within the last day, each with test results, whose check runs were sent;
  // 3 due. Through the triggers: each build finishes after its results are written.
  await t.db.execute(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2003)
     INSERT INTO builds (id, project_id, pipeline_id, build_number, branch, commit_sha, config_snapshot, status, trigger_type, queued_at, created_at, updated_at)
     SELECT 'b' || i, 'p', 'pl', i, 'main', printf('%040d', i), '{}', 'running', 'manual', ?1 - 3600, ?1 - 3600, ?1 - 3600 FROM n`,
    [NOW],
  );
  await t.db.execute(
    "INSERT INTO build_test_summaries (build_id, pipeline_id, lane, commit_sha, build_number, updated_at) SELECT id, pipeline_id, 'main', commit_sha, build_number, updated_at FROM builds",
  );
  await t.db.execute("UPDATE builds SET status = 'failed', finished_at = ?1 - 60, updated_at = ?1 - 60", [NOW]);
  await t.db.execute("UPDATE check_run_reports SET done = 1, check_run_id = '1' WHERE build_id NOT IN ('b1', 'b2', 'b3')");
});

test("a pass reads the due check runs from check_run_reports_due, and only the claimed builds by id", async () => {
  const { statements } = await plansOf(t, (db) =>
    reportCheckRuns({ db, now: NOW, log: { warn() {} }, secrets: null, config: {}, clock: { now: () => NOW }, baseUrl: "http://roost.test" } as never),
  );
  const plans = statements.map(({ sql, plan }) => ({ sql: sql.replace(/\s+/g, " ").trim(), plan: plan.join("\n") }));
  const look = plans.find((p) => p.sql.startsWith("SELECT 1 FROM check_run_reports"))!;
  expect(look.plan).toBe("SEARCH check_run_reports USING COVERING INDEX check_run_reports_due (next_attempt_at<?)");
  const claim = plans.find((p) => p.sql.startsWith("UPDATE check_run_reports SET claimed_by"))!;
  expect(claim.plan).toContain("SEARCH check_run_reports USING COVERING INDEX check_run_reports_due (next_attempt_at<?)");
  const builds = plans.find((p) => p.sql.includes("FROM builds b"))!;
  expect(builds.plan).toContain("SEARCH b USING INDEX sqlite_autoindex_builds_1 (id=?)");
  // No statement of the pass reads a range of builds, or any table whole.
  for (const { plan } of plans) {
    expect(plan).not.toContain("builds_updated_at");
    expect(plan).not.toMatch(/^SCAN (?!CONSTANT ROW)/m);
  }
  // The three due were claimed (their sends failed: no host answers here), the others not touched.
  const rows = await t.db.execute("SELECT build_id FROM check_run_reports WHERE done = 0 ORDER BY build_id");
  expect(rows.rows.map((r) => r.build_id)).toEqual(["b1", "b2", "b3"]);
});
