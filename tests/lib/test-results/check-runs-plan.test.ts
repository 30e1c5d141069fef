// The check-run reporter's pass (lib/test-results/check-runs.ts) runs every few seconds on the
// daemon's event loop: it reads the last day's finished builds as one range of builds_updated_at,
// never the builds by status (every finished build there is), asserted on SQLite's query plan
// (https://www.sqlite.org/eqp.html) of the statement the pass runs.
import { expect, test } from "bun:test";
import { migratedDatabasePerFile, plansOf } from "../../helpers/query-plans.ts";
import { reportCheckRuns } from "../../../lib/test-results/check-runs.ts";

const t = migratedDatabasePerFile("roost-check-runs-plan-");

test("a pass reads the builds of the last day through builds_updated_at, not every finished build", async () => {
  const { statements } = await plansOf(t, (db) => reportCheckRuns({ db, now: 1_800_000_000 } as never));
  const { plan } = statements[0]!;
  expect(plan.find((line) => / b USING /.test(line))).toBe("SEARCH b USING INDEX builds_updated_at (updated_at>?)");
  expect(plan.join("\n")).not.toMatch(/SCAN b|builds_status_queued/);
});
