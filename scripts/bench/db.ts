// `bun run scripts/bench/db.ts`: the database layer alone, both drivers on the same temp file
// schema, a few seconds in all.
//   - point query: one primary-key SELECT (a session lookup's shape), median latency over 20,000
//     calls: bun:sqlite (cached statements) against @libsql/client's `file:` mode (the adapter a
//     remote server uses; it prepares every statement on every call);
//   - write burst: 200 single-row write transactions started at once, through the write queue
//     (group commit) against the same 200 committed one by one: commits and wall time.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inTransaction, openDatabase, type Db, type DriverChoice } from "../../lib/db/client.ts";

const QUERIES = 20_000;
const BURST = 200;

async function pointQuery(db: Db): Promise<number> {
  await db.execute("CREATE TABLE s (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, expires_at INTEGER NOT NULL)");
  await db.batch(Array.from({ length: 1000 }, (_, i) => ({ sql: "INSERT INTO s VALUES (?, ?, ?)", args: [`s${i}`, `u${i}`, i] })));
  const times: number[] = [];
  for (let i = 0; i < QUERIES; i++) {
    const started = performance.now();
    await db.execute({ sql: "SELECT user_id, expires_at FROM s WHERE id = ?", args: [`s${i % 1000}`] });
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]! * 1000;
}

async function burst(db: Db, together: boolean): Promise<{ ms: number; commits: number }> {
  await db.execute("CREATE TABLE IF NOT EXISTS w (id INTEGER PRIMARY KEY, v TEXT)");
  const before = db.commits;
  const started = performance.now();
  const one = (i: number) => inTransaction(db, (tx) => tx.execute({ sql: "INSERT INTO w (v) VALUES (?)", args: [`v${i}`] }));
  if (together) await Promise.all(Array.from({ length: BURST }, (_, i) => one(i)));
  else for (let i = 0; i < BURST; i++) await one(i);
  return { ms: performance.now() - started, commits: db.commits - before };
}

const dir = mkdtempSync(join(tmpdir(), "roost-bench-db-"));
try {
  for (const driver of ["bun:sqlite", "libsql"] as DriverChoice[]) {
    const db = await openDatabase(`file:${join(dir, `${driver.replace(":", "-")}.db`)}`, undefined, driver);
    const p50 = await pointQuery(db);
    const grouped = await burst(db, true);
    const serial = await burst(db, false);
    console.log(
      `${driver.padEnd(10)} point query p50 ${p50.toFixed(1)} µs · ${BURST} writes at once: ${grouped.commits} commit(s), ${grouped.ms.toFixed(0)} ms · one by one: ${serial.commits} commits, ${serial.ms.toFixed(0)} ms`,
    );
    db.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
