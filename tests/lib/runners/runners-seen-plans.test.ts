// The runners seen lately (/metrics' roost_runners_connected, and the live runners routing reads) are read by a
// range of runners_last_seen (migration 43), not by scanning every registered runner: their cost
// must not grow with the fleet.
import { expect, test } from "bun:test";
import { connectedRunnerCount, liveRunners } from "../../../lib/runners/store.ts";
import { migratedDatabasePerFile, plansOf } from "../../helpers/query-plans.ts";

const t = migratedDatabasePerFile("roost-runners-seen-");
const NOW = 1_800_000_000;

test("the runners connected in the last minute are counted from an index range", async () => {
  const { result, statements } = await plansOf(t, (db) => connectedRunnerCount(db, NOW), /FROM runners WHERE last_seen_at/);
  expect(result).toBe(0);
  expect(statements).toHaveLength(1);
  expect(statements[0]!.plan.join(" | ")).toContain("USING COVERING INDEX runners_last_seen (last_seen_at>?)");
});

test("the live runners (routing) are read from the same range", async () => {
  const { statements } = await plansOf(t, (db) => liveRunners(db, NOW, 60), /FROM runners WHERE/);
  expect(statements).toHaveLength(1);
  expect(statements[0]!.plan.join(" | ")).toContain("USING INDEX runners_last_seen (last_seen_at>?)");
});
