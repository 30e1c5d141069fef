// The passes that run every few seconds on every daemon read only what is waiting, never the
// history (schema.sql migration 35): the publish claim and the host release pass start from the
// approved deployments of their kind, the log archive pass from the logs not yet archived, the
// unroutable-build pass from the queued builds (schema.sql migration 42).
// Asserted on SQLite's query plans (https://www.sqlite.org/eqp.html) of the statements the real
// functions run, recorded through the database they are given.
import { expect, test } from "bun:test";
import { migratedDatabasePerFile, plansOf } from "../../helpers/query-plans.ts";
import type { Db } from "../../../lib/db/client.ts";
import { archiveFinishedLogs } from "../../../lib/logs/archive.ts";
import { claimDeployment } from "../../../lib/publishing/claim.ts";
import { claimHostRelease, publishHostReleases } from "../../../lib/publishing/host-release-claim.ts";
import { flagUnroutableBuilds } from "../../../lib/runners/reaper.ts";

const t = migratedDatabasePerFile("roost-pass-plans-", 1);

/** The plans of the statements `work` runs that `match` (there is at least one), each plan as one text. */
async function passPlans(work: (recording: Db) => Promise<unknown>, match: RegExp): Promise<string[]> {
  const { statements } = await plansOf(t, work, match);
  expect(statements.length).toBeGreaterThan(0);
  return statements.map(({ plan }) => plan.join("\n"));
}

test("the log archive pass starts from the logs not yet archived", async () => {
  const objects = { kind: "s3" } as never;
  const [plan] = await passPlans(
    (recording) => archiveFinishedLogs({ db: recording, objects, clock: { now: () => 1 }, log: console } as never, "daemon"),
    /FROM build_log_stats s/,
  );
  expect(plan).toContain("SCAN s USING INDEX build_log_stats_unarchived");
  expect(plan).not.toMatch(/SCAN b\b/);
});

test("the host release pass starts from the approved host releases; the running check is one index lookup", async () => {
  const deps = { db: t.db, clock: { now: () => 1 }, config: { runners: { leaseSeconds: 30 } }, log: console } as never;
  // The pass looks before it claims (an idle pass takes no write lock): the look is the same range.
  const [look] = await passPlans((recording) => publishHostReleases({ ...(deps as object), db: recording } as never), /FROM deployments/);
  expect(look).toContain("USING COVERING INDEX deployments_for_daemon");
  const [plan] = await passPlans(
    (recording) => claimHostRelease({ ...(deps as object), db: recording } as never, "daemon:c"),
    /UPDATE deployments SET status = 'running'/,
  );
  expect(plan).toContain("USING INDEX deployments_for_daemon");
  expect(plan).toContain("USING COVERING INDEX deployments_running_target (project_id=? AND target=?)");
  expect(plan).not.toMatch(/SCAN d\n|SCAN d$/);
});

test("the publish claim starts from the approved deployments for runners", async () => {
  const runner = { id: "r", labels: [], capabilities: { os: "linux" } } as never;
  const [plan] = await passPlans((recording) => claimDeployment(recording, runner, "c", 1, 30), /publisher_type != 'host_release'/);
  expect(plan).toContain("SCAN d USING INDEX deployments_for_runners");
  expect(plan).toContain("USING COVERING INDEX deployments_running_target (project_id=? AND target=?)");
});

test("the unroutable-build pass starts from the builds queued longest, in an index of the queued builds only", async () => {
  const ctx = { db: t.db, clock: { now: () => 1_000_000 }, config: { runners: { leaseSeconds: 30 } } } as never;
  const [plan] = await passPlans((recording) => flagUnroutableBuilds({ ...(ctx as object), db: recording } as never), /b\.status = 'queued'/);
  expect(plan!.split("\n")[0]).toBe("SEARCH b USING INDEX builds_queued_since (queued_at<?)");
});
