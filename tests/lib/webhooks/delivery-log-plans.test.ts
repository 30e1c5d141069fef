// A page of a project's delivery log costs the same at any depth of its 30 days (docs/webhooks.md
// "The delivery log"): the project alone, or with a result, with or without a cursor, is one
// range of an index sought by the project, the result and the cursor, read in the order listed
// (no temporary b-tree), never a scan of the deliveries (schema.sql migration 48). Asserted on
// SQLite's query plans (https://www.sqlite.org/eqp.html) of the statement listProjectDeliveries runs.
import { expect, test } from "bun:test";
import { migratedDatabasePerFile, plansOf } from "../../helpers/query-plans.ts";
import { listProjectDeliveries, type DeliveryResult } from "../../../lib/webhooks/deliveries.ts";

const t = migratedDatabasePerFile("roost-delivery-log-plans-");

const cases: [string, DeliveryResult | undefined, string][] = [
  ["the project", undefined, "webhook_deliveries_project (project_id=?"],
  ...(["built", "ignored", "duplicate", "rejected", "failed"] as const).map((result): [string, DeliveryResult, string] => [
    `the project, result ${result}`,
    result,
    "webhook_deliveries_project_result (project_id=? AND result=?",
  ]),
];

test.each(cases)("%s: one index range from the cursor down, in order", async (_, result, range) => {
  for (const before of [undefined, [1_800_000_000, 42] as const]) {
    const { statements } = await plansOf(t, (db) => listProjectDeliveries(db, { projectId: "project-1", result, limit: 50, before }));
    expect(statements.map(({ plan }) => plan)).toEqual([[`SEARCH webhook_deliveries USING INDEX ${range}${before ? " AND received_at<?)" : ")"}`]]);
  }
});
