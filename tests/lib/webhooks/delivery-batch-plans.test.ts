// A push's record in its write batch (insertDeliveryStatement, lib/webhooks/deliveries.ts) reads
// the delivery that holds its dedupe keys and checks its guards once each: the one row they are
// read into is not flattened into the INSERT, nor the INSERT's WHERE pushed down into it, which
// evaluated every one of those subqueries twice, for the row and again for its WHERE. Asserted on
// SQLite's query plan (https://www.sqlite.org/eqp.html) of the statement the write batch runs.
import { expect, test } from "bun:test";
import { migratedDatabasePerFile } from "../../helpers/query-plans.ts";
import { builtPushRecord } from "../../helpers/deliveries.ts";
import { all } from "../../../lib/db/client.ts";
import { allOf } from "../../../lib/db/database.ts";
import { insertDeliveryStatement } from "../../../lib/webhooks/deliveries.ts";
import { dedupeKeyHolder } from "../../../lib/webhooks/dedupe-keys.ts";
import { pipelinesState } from "../../../lib/pipelines/store.ts";
import { buildsRepositoryAsRead } from "../../../lib/projects/store.ts";

const t = migratedDatabasePerFile("roost-delivery-batch-plans-");
const NOW = 1_800_000_000;

test("a push's record in its write batch looks its dedupe keys up once and each guard once", async () => {
  const keys = ["github:delivery:d-1", "github:content:c-1"];
  const state = pipelinesState("r");
  const guard = allOf([buildsRepositoryAsRead("r", null), { sql: `${state.sql} IS ?`, args: [...state.args, 0] }]);
  const statement = insertDeliveryStatement(
    builtPushRecord(1, NOW, { dedupeKeys: keys }),
    guard,
    new Map(),
    dedupeKeyHolder({ dedupeKeys: keys.slice(0, 1), contentKey: keys[1]! }, keys, NOW)!,
  );
  const { sql, args } = statement as { sql: string; args: never[] };
  const plan = (await all(t.db, `EXPLAIN QUERY PLAN ${sql}`, args)).map((r) => String(r.detail));
  expect(plan.filter((line) => line.includes("webhook_dedupe_keys"))).toEqual([
    "SEARCH webhook_dedupe_keys USING INDEX sqlite_autoindex_webhook_dedupe_keys_1 (key=?)",
  ]);
  // The two guards: that no project builds the repository, and its pipelines' state.
  expect(plan.filter((line) => line.includes("projects"))).toHaveLength(2);
});
