// The build feed (lib/live/build-feed.ts) reads a burst of changes VERSION_PAGE versions at a time:
// each read is a seek of builds_updated_at from where the last one stopped, never a walk of the
// entries before it. A position inside a second is sought by (updated_at, rowid), which a row value
// does not do (it seeks by updated_at and walks the second's entries up to the position: quadratic
// for a bulk change of one second). Asserted on SQLite's query plans (https://www.sqlite.org/eqp.html).
import { expect, test } from "bun:test";
import { migratedDatabasePerFile, plansOf } from "../../helpers/query-plans.ts";
import { buildVersionsPage } from "../../../lib/builds/store.ts";

const t = migratedDatabasePerFile("roost-build-feed-plans-");

test("the first read is one range of builds_updated_at; the next ones seek the position within its second, then the seconds after", async () => {
  const first = await plansOf(t, (db) => buildVersionsPage(db, { since: 1_800_000_000, after: null }, 1_000));
  expect(first.statements.map(({ plan }) => plan)).toEqual([["SEARCH builds USING INDEX builds_updated_at (updated_at>?)"]]);
  const next = await plansOf(t, (db) => buildVersionsPage(db, { since: 1_800_000_000, after: { updated_at: 1_800_000_000, rowid: 42 } }, 1_000));
  const searches = next.statements.flatMap(({ plan }) => plan.filter((line) => line.startsWith("SEARCH") || line.startsWith("SCAN builds")));
  expect(searches).toEqual([
    "SEARCH builds USING INDEX builds_updated_at (updated_at=? AND rowid>?)",
    "SEARCH builds USING INDEX builds_updated_at (updated_at>?)",
  ]);
});
