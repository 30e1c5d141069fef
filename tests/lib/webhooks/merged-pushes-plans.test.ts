// The write batches of pushes waiting together, merged (lib/webhooks/merged-writes.ts): one
// statement writes their deliveries, one their builds. However many pushes it holds, each reads
// the dedupe keys and the deliveries by their keys, each distinct guard once, and the queue's
// sequence once before the inserts (a MATERIALIZED CTE, which the build numbers and queue places
// rely on). Asserted on SQLite's query plan (https://www.sqlite.org/eqp.html).
import { expect, test } from "bun:test";
import { migratedDatabasePerFile } from "../../helpers/query-plans.ts";
import { builtPushRecord } from "../../helpers/deliveries.ts";
import { all } from "../../../lib/db/client.ts";
import type { Pipeline } from "../../../lib/pipelines/store.ts";
import type { ConfigSnapshot } from "../../../lib/pipelines/config.ts";
import { mergedPushes, type PushWrite } from "../../../lib/webhooks/merged-writes.ts";

const t = migratedDatabasePerFile("roost-merged-pushes-plans-");
const NOW = 1_800_000_000;

function push(i: number): PushWrite {
  const snapshot = { concurrency: { max_concurrent: 5, cancel_previous: false }, execution_config: { runner_labels: [], platforms: ["android"] } };
  return {
    record: builtPushRecord(i, NOW, {
      decisions: [{ pipeline_id: "pl", pipeline_name: "all", build: true, reason: "branch main matches **", build_id: `build-${i}`, build_number: 0 }],
      dedupeKeys: [`github:delivery:d-${i}`],
    }),
    contentKey: null,
    guard: { sql: "(SELECT n FROM catalogue_version WHERE id = 1) = ?", args: [7] },
    builds: [
      {
        id: `build-${i}`,
        pipeline: { id: "pl", project_id: "p" } as Pipeline,
        input: { pipelineId: "pl", branch: "main", commitSha: "a".repeat(40), triggerType: "webhook", configSnapshot: snapshot as unknown as ConfigSnapshot },
      },
    ],
  };
}

test("merged pushes read the dedupe keys and deliveries by their keys, each guard and the queue's sequence once", async () => {
  const merged = mergedPushes.merge([push(1), push(2), push(3)])!;
  expect(merged.statements).toHaveLength(2);
  const [deliveries, builds] = await Promise.all(
    merged.statements.map(async ({ sql, args }) => (await all(t.db, `EXPLAIN QUERY PLAN ${sql}`, args as never[])).map((r) => String(r.detail))),
  );
  expect(deliveries!.filter((line) => line.includes("webhook_dedupe_keys"))).toEqual(["SEARCH h USING INDEX sqlite_autoindex_webhook_dedupe_keys_1 (key=?)"]);
  // The three pushes' one guard, once.
  expect(deliveries!.filter((line) => line.includes("catalogue_version"))).toHaveLength(1);
  expect(builds).toContain("MATERIALIZE q");
  expect(builds!.filter((line) => line.includes("webhook_deliveries"))).toEqual(["SEARCH w USING INDEX sqlite_autoindex_webhook_deliveries_1 (id=?)"]);
});

test("pushes that share a dedupe key are not merged", () => {
  const again = push(2);
  again.record.dedupeKeys = push(1).record.dedupeKeys;
  expect(mergedPushes.merge([push(1), again])).toBeNull();
});
