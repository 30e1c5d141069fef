// A log append written from what this daemon remembers (lib/logs/append-endpoint.ts
// RememberedWriter) holds its runner's token and its job in its write (lib/runners/jobs.ts
// jobHeldForAppend): one statement for all the appends written together, each entry looked up by
// primary key, so its cost does not grow with the runners, jobs or builds a database holds.
// Asserted on SQLite's query plan (https://www.sqlite.org/eqp.html).
import { expect, test } from "bun:test";
import { migratedDatabasePerFile } from "../../helpers/query-plans.ts";
import { all } from "../../../lib/db/client.ts";
import { jobHeldForAppend } from "../../../lib/runners/jobs.ts";

const t = migratedDatabasePerFile("roost-held-append-plans-");

test("the appends' held condition reads each runner, job and build by its key", async () => {
  const held = jobHeldForAppend({ id: "r-1", secretHash: "h" }, "j-1");
  const items = JSON.stringify([held.item, jobHeldForAppend({ id: "r-2", secretHash: "h2" }, "j-2").item]);
  const plan = (await all(t.db, `EXPLAIN QUERY PLAN ${held.counted("?")}`, [items])).map((r) => String(r.detail));
  expect(plan[0]).toStartWith("SCAN h VIRTUAL TABLE");
  expect(plan.slice(1).sort()).toEqual([
    "SEARCH b USING INDEX sqlite_autoindex_builds_1 (id=?)",
    "SEARCH j USING INDEX sqlite_autoindex_jobs_1 (id=?)",
    "SEARCH r USING INDEX sqlite_autoindex_runners_1 (id=?)",
  ]);
});
