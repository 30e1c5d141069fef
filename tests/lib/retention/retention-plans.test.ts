// Retention reads only the builds due (docs/operations.md "Retention"): over a pipeline with many
// builds whose logs and artifacts are still kept, each reason a build may be due for (logs past
// their age, artifacts past theirs, below keep_builds) is one index range that starts at the oldest
// due build, so the builds still kept are never read. Asserted on SQLite's own query plans
// (https://www.sqlite.org/eqp.html) of the statements a retention pass runs.
import { beforeAll, expect, test } from "bun:test";
import { migratedDatabasePerFile, plansOf } from "../../helpers/query-plans.ts";
import { seedPipeline } from "../../helpers/rows.ts";
import { all } from "../../../lib/db/client.ts";
import { enforceRetention } from "../../../lib/retention/retention.ts";
import { MetricsRegistry } from "../../../lib/daemon/metrics.ts";
import { openDiskStore } from "../../../lib/object-store/disk.ts";

const NOW = 1_800_000_000;
const DAY = 86_400;
const t = migratedDatabasePerFile("roost-retention-plans-", NOW);
beforeAll(async () => {
  const { db } = t;
  await seedPipeline(db);
  // 2,000 finished builds, one a minute up to a day ago: the oldest 20 are past a 30-day age.
  await db.execute(
    `INSERT INTO builds (id, project_id, pipeline_id, build_number, branch, commit_sha, config_snapshot, status, exit_code, trigger_type, trigger_event, trigger_ref, trigger_actor,
       queued_at, started_at, finished_at, created_at, updated_at)
     WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
     SELECT 'b' || i, 'p', 'pl', i, 'main', printf('%040x', i), '{}', CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'succeeded' END, CASE WHEN i % 10 = 0 THEN 1 ELSE 0 END,
       'manual', 'manual', 'refs/heads/main', 'test', at, at, at, at, at
     FROM (SELECT i, CASE WHEN i <= 20 THEN ${NOW - 40 * DAY} + i * 60 ELSE ${NOW - 2 * DAY} + i * 30 END AS at FROM n)`,
  );
});

/** Runs a retention pass with these defaults, and returns each SELECT of builds it ran with SQLite's plan for it. */
async function pass(retention: { logDays: number; artifactDays: number; keepBuilds: number }) {
  const config = { retention, dataDir: t.dir } as never;
  const log = { info() {}, warn() {}, error() {}, debug() {} } as never;
  const { result, statements } = await plansOf(
    t,
    (db) => enforceRetention({ db, clock: { now: () => NOW }, config, metrics: new MetricsRegistry(), log, objects: openDiskStore(t.dir) }),
    /^\s*SELECT b\.id, b\.build_number/,
  );
  return { result, plans: statements };
}

test("builds past their logs' or artifacts' age are read from the start of an index range, not among the builds still kept", async () => {
  const { result, plans } = await pass({ logDays: 30, artifactDays: 60, keepBuilds: 0 });
  // The 20 builds older than 30 days lose their logs; none is older than 60 days.
  expect(result).toMatchObject({ logs: 20, artifacts: 0, more: false });
  expect(plans.map(({ plan }) => plan.find((line) => line.startsWith("SEARCH b ")))).toEqual([
    "SEARCH b USING INDEX builds_logs_kept (pipeline_id=? AND <expr><?)",
    "SEARCH b USING INDEX builds_artifacts_kept (pipeline_id=? AND <expr><?)",
  ]);
  for (const { sql, plan } of plans) {
    expect(plan.join("\n")).not.toMatch(/SCAN b|TEMP B-TREE/);
    // The branch's newest success (kept whatever its age) is one seek per trigger: the newest entry
    // of each range of builds_pipeline_branch_status_trigger (schema.sql migration 52), not every
    // success the branch has.
    expect(plan.filter((line) => line.startsWith("SEARCH builds "))).toEqual(
      Array(4).fill("SEARCH builds USING INDEX builds_pipeline_branch_status_trigger (pipeline_id=? AND branch=? AND status=? AND trigger_kind=?)"),
    );
    // One bound on the finish time, the age's: the plan shows "<expr><?" for whichever bound
    // SQLite picks, and a second one (the grace period) was picked once, which held nearly every build.
    expect(sql.slice(sql.indexOf("FROM builds b")).match(/COALESCE\(b\.finished_at, b\.updated_at\) <=? :/g)).toHaveLength(1);
  }
});

test("builds below keep_builds are one range of the builds whose logs or artifacts are still kept", async () => {
  const { result, plans } = await pass({ logDays: 0, artifactDays: 0, keepBuilds: 1000 });
  // One batch of the 1,000 oldest builds (20 of them already without logs).
  expect(result).toMatchObject({ logs: 480, more: true });
  expect(plans.map(({ plan }) => plan.find((line) => line.startsWith("SEARCH b ")))).toEqual([
    "SEARCH b USING INDEX builds_retention_pending (pipeline_id=? AND build_number<?)",
  ]);
  expect(plans[0]!.plan.join("\n")).not.toMatch(/SCAN b|TEMP B-TREE/);
});

test("once the due builds are cleaned, a pass by age finds nothing left to clean", async () => {
  const { result } = await pass({ logDays: 30, artifactDays: 60, keepBuilds: 0 });
  expect(result).toMatchObject({ logs: 0, artifacts: 0, more: false });
  expect(await all(t.db, "SELECT COUNT(*) AS n FROM builds WHERE logs_deleted_at IS NOT NULL")).toEqual([{ n: 500 }]);
});
