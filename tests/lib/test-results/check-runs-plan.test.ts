// The check-run reporter's pass (lib/test-results/check-runs.ts) runs every few seconds on the
// daemon's event loop: it reads the last day's finished builds as one range of builds_updated_at,
// never the builds by status (every finished build there is), asserted on SQLite's query plan
// (https://www.sqlite.org/eqp.html) of the statement the pass runs.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Db } from "../../../lib/db/client.ts";
import type { Args, Statement } from "../../../lib/db/database.ts";
import { migrate } from "../../../lib/db/migrate.ts";
import { reportCheckRuns } from "../../../lib/test-results/check-runs.ts";

let dir: string;
let db: Db;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-check-runs-plan-"));
  db = await openDatabase(`file:${join(dir, "roost.db")}`);
  await migrate(db, () => 1_800_000_000);
});
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

test("a pass reads the builds of the last day through builds_updated_at, not every finished build", async () => {
  const seen: { sql: string; args: Args }[] = [];
  const execute = db.execute;
  db.execute = (stmt: Statement, args?: Args) => {
    seen.push(typeof stmt === "string" ? { sql: stmt, args: args ?? [] } : { sql: stmt.sql, args: stmt.args ?? [] });
    return execute(stmt, args);
  };
  await reportCheckRuns({ db, now: 1_800_000_000 } as never).finally(() => (db.execute = execute));
  const [pass] = seen;
  // Explained on a connection of its own (see tests/lib/retention/retention-plans.test.ts).
  const explainer = new Database(join(dir, "roost.db"));
  try {
    const plan = explainer
      .query<{ detail: string }, never[]>(`EXPLAIN QUERY PLAN ${pass!.sql}`)
      .all(...(pass!.args as never[]))
      .map((r) => r.detail);
    expect(plan.find((line) => / b USING /.test(line))).toBe("SEARCH b USING INDEX builds_updated_at (updated_at>?)");
    expect(plan.join("\n")).not.toMatch(/SCAN b|builds_status_queued/);
  } finally {
    explainer.close();
  }
});
