// For the query-plan tests (tests/lib/**/*-plans.test.ts): a migrated database of the test file's
// own, the statements a real function runs on it recorded as it runs them, and SQLite's plan for
// each (EXPLAIN QUERY PLAN, https://www.sqlite.org/eqp.html), so an index a listing or a pass
// relies on cannot be lost without a test failing.
import { afterAll, beforeAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { all, openDatabase, type Args, type Db } from "../../lib/db/client.ts";
import { recordingDb } from "./recording-db.ts";
import { migrate } from "../../lib/db/migrate.ts";

export interface PlanDatabase {
  db: Db;
  /** The directory that holds roost.db. */
  dir: string;
}

/** Opens roost.db in a fresh temporary directory and migrates it before the file's tests; closes and removes both after them. */
export function migratedDatabasePerFile(prefix: string, now = 1_800_000_000): PlanDatabase {
  const t = {} as PlanDatabase;
  beforeAll(async () => {
    t.dir = mkdtempSync(join(tmpdir(), prefix));
    t.db = await openDatabase(`file:${join(t.dir, "roost.db")}`);
    await migrate(t.db, () => now);
  });
  afterAll(() => {
    t.db.close();
    rmSync(t.dir, { recursive: true, force: true });
  });
  return t;
}

export interface PlannedStatement {
  sql: string;
  args: Args;
  /** The plan's lines (EXPLAIN QUERY PLAN's `detail` column), in order. */
  plan: string[];
}

/**
 * Runs `work` with a database that records each statement run through it (recordingDb), and returns what `work` answered with the statements that `match`, each with its plan. The
 * plans are explained on a connection of their own: an EXPLAIN through the daemon's reader left
 * that reader on its snapshot (bun:sqlite 1.4.5), so later reads missed the work's commit.
 */
export async function plansOf<T>(t: PlanDatabase, work: (recording: Db) => Promise<T>, match = /./): Promise<{ result: T; statements: PlannedStatement[] }> {
  const seen: { sql: string; args: Args }[] = [];
  const result = await work(recordingDb(t.db, (sql, args) => seen.push({ sql, args })));
  const explainer = await openDatabase(`file:${join(t.dir, "roost.db")}`);
  try {
    const statements: PlannedStatement[] = [];
    for (const { sql, args } of seen.filter(({ sql }) => match.test(sql)))
      statements.push({ sql, args, plan: (await all(explainer, `EXPLAIN QUERY PLAN ${sql}`, args)).map((r) => String(r.detail)) });
    return { result, statements };
  } finally {
    explainer.close();
  }
}
