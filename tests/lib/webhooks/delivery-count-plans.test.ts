// The counts that decide whether a repository's deliveries raise an incident (lib/webhooks/
// deliveries.ts) read only the deliveries they count, since the hour they count from: an index of
// the rejected and one of the failed deliveries (schema.sql migration 42), which an accepted push
// does not write. Asserted on SQLite's query plans (https://www.sqlite.org/eqp.html) of the
// statements the real functions run.
import { expect, test } from "bun:test";
import { migratedDatabasePerFile, plansOf } from "../../helpers/query-plans.ts";
import { recentFailures, recentRejections } from "../../../lib/webhooks/deliveries.ts";

const t = migratedDatabasePerFile("roost-delivery-count-plans-");

test("a repository's rejected deliveries since an hour ago: one range of the rejected ones", async () => {
  const { statements } = await plansOf(t, (db) => recentRejections(db, "r", 1));
  expect(statements.map(({ plan }) => plan)).toEqual([
    ["SEARCH webhook_deliveries USING COVERING INDEX webhook_deliveries_rejected (repository_id=? AND received_at>?)"],
  ]);
});

test("failed deliveries since an hour ago, of a repository or of a forge's deliveries naming none: one range of the failed ones", async () => {
  for (const repositoryId of ["r", null]) {
    const { statements } = await plansOf(t, (db) => recentFailures(db, { repositoryId, forge: "github" }, 1));
    // Covering for a repository; for a forge's deliveries the host is read from each row counted.
    expect(statements.map(({ plan }) => plan)).toEqual([
      [expect.stringMatching(/^SEARCH webhook_deliveries USING (COVERING )?INDEX webhook_deliveries_failed \(repository_id=\? AND received_at>\?\)$/)],
    ]);
  }
});
