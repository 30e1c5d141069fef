// A page of a project's delivery log costs the same at any depth of its 30 days (docs/webhooks.md
// "The delivery log"): the project alone, or with a result, with or without a cursor, is one
// range of an index sought by the project, the result and the cursor, read in the order listed
// (no temporary b-tree), never a scan of the deliveries (schema.sql migration 48). Asserted on
// SQLite's query plans (https://www.sqlite.org/eqp.html) of the statement listProjectDeliveries runs.
import { expect, test } from "bun:test";
import { migratedDatabasePerFile, plansOf } from "../../helpers/query-plans.ts";
import { listDeliveries, listProjectDeliveries, type DeliveryResult } from "../../../lib/webhooks/deliveries.ts";

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
  for (const before of [undefined, [1_800_000_000, "0123456789abcdefABCD"] as const]) {
    const { statements } = await plansOf(t, (db) => listProjectDeliveries(db, { projectId: "project-1", result, limit: 50, before }));
    expect(statements.map(({ plan }) => plan)).toEqual([[`SEARCH webhook_deliveries USING INDEX ${range}${before ? " AND (received_at,id)<(?,?))" : ")"}`]]);
  }
});

// The admin log (every delivery): one range of webhook_deliveries_received from the cursor down; a
// page filtered by result reads a bounded stretch of that range (DELIVERY_SCAN_WINDOW) and looks
// the stretch's rows up by rowid, and the stretch's end is one more seek of the same index.
test("the admin log: one index range of every delivery by time, or a bounded stretch of it for a result", async () => {
  for (const before of [undefined, [1_800_000_000, "0123456789abcdefABCD"] as const]) {
    const range = `webhook_deliveries_received${before ? " ((received_at,id)<(?,?))" : ""}`;
    const all = await plansOf(t, (db) => listDeliveries(db, { limit: 50, before }));
    expect(all.statements.map(({ plan }) => plan)).toEqual([[`${before ? "SEARCH" : "SCAN"} webhook_deliveries USING INDEX ${range}`]]);
    const filtered = await plansOf(t, (db) => listDeliveries(db, { limit: 50, result: "rejected", before }));
    for (const { plan } of filtered.statements) {
      expect(plan.join("\n")).not.toContain("TEMP B-TREE");
      expect(plan.join("\n")).not.toMatch(/SCAN webhook_deliveries$/m);
    }
    expect(filtered.statements.length).toBe(2);
  }
});
