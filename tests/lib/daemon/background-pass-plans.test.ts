// The passes that run every few seconds on every daemon read only what is waiting, never the
// history (schema.sql migration 35): the publish claim and the host release pass start from the
// approved deployments of their kind, the log archive pass from the logs not yet archived.
// Asserted on SQLite's query plans (https://www.sqlite.org/eqp.html) of the statements the real
// functions run, recorded through the database they are given.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Db } from "../../../lib/db/client.ts";
import type { Args, Statement } from "../../../lib/db/database.ts";
import { migrate } from "../../../lib/db/migrate.ts";
import { archiveFinishedLogs } from "../../../lib/logs/archive.ts";
import { claimDeployment } from "../../../lib/publishing/claim.ts";
import { publishHostReleases } from "../../../lib/publishing/host-release.ts";

let dir: string;
let db: Db;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-pass-plans-"));
  db = await openDatabase(`file:${join(dir, "roost.db")}`);
  await migrate(db, () => 1);
});
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The statements `work` runs on the database (and in its transactions), with their query plans. */
async function plansOf(work: (recording: Db) => Promise<unknown>, match: RegExp): Promise<string[]> {
  const seen: string[] = [];
  const record = (stmt: Statement) => {
    const sql = typeof stmt === "string" ? stmt : stmt.sql;
    if (match.test(sql)) seen.push(sql);
  };
  const recording = new Proxy(db, {
    get(target, key) {
      if (key === "execute") return (stmt: Statement, args?: Args) => (record(stmt), target.execute(stmt, args));
      if (key === "transaction")
        return (fn: (tx: Db) => Promise<unknown>) =>
          target.transaction((tx) =>
            fn(
              new Proxy(tx, {
                get: (t, k) => (k === "execute" ? (s: Statement, a?: Args) => (record(s), t.execute(s, a)) : Reflect.get(t, k)),
              }) as unknown as Db,
            ),
          );
      return Reflect.get(target, key);
    },
  });
  await work(recording as Db);
  expect(seen.length).toBeGreaterThan(0);
  const plans: string[] = [];
  for (const sql of seen) {
    const params = (sql.match(/\?/g) ?? []).map(() => null);
    plans.push((await db.execute(`EXPLAIN QUERY PLAN ${sql}`, params)).rows.map((r) => String(r.detail)).join("\n"));
  }
  return plans;
}

test("the log archive pass starts from the logs not yet archived", async () => {
  const objects = { kind: "s3" } as never;
  const [plan] = await plansOf(
    (recording) => archiveFinishedLogs({ db: recording, objects, clock: { now: () => 1 }, log: console } as never),
    /FROM build_log_stats s/,
  );
  expect(plan).toContain("SCAN s USING INDEX build_log_stats_unarchived");
  expect(plan).not.toMatch(/SCAN b\b/);
});

test("the host release pass starts from the approved host releases; the running check is one index lookup", async () => {
  const deps = { db, clock: { now: () => 1 }, config: { runners: { leaseSeconds: 30 } }, log: console } as never;
  const [plan] = await plansOf(
    (recording) => publishHostReleases({ ...(deps as object), db: recording } as never),
    /UPDATE deployments SET status = 'running'/,
  );
  expect(plan).toContain("USING INDEX deployments_for_daemon");
  expect(plan).toContain("USING COVERING INDEX deployments_running_target (project_id=? AND target=?)");
  expect(plan).not.toMatch(/SCAN d\n|SCAN d$/);
});

test("the publish claim starts from the approved deployments for runners", async () => {
  const runner = { id: "r", labels: [], capabilities: { os: "linux" } } as never;
  const [plan] = await plansOf((recording) => claimDeployment(recording, runner, "c", 1, 30), /publisher_type != 'host_release'/);
  expect(plan).toContain("SCAN d USING INDEX deployments_for_runners");
  expect(plan).toContain("USING COVERING INDEX deployments_running_target (project_id=? AND target=?)");
});
