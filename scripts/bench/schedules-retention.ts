// The cost of two background tasks over a database that has been in use for a while: 100,000
// builds (10 log lines and one artifact row each) in 20 pipelines on one project, on a bun:sqlite
// file as the daemon opens it.
//   - scheduler tick: one runDueSchedules pass firing SCHEDULES due schedules (each claims its
//     slot and creates a build in its own transaction; the branch head is answered in-process, the
//     host is not what is measured), against a bare indexed SELECT per schedule over the same
//     builds table (the newest build of the schedule's pipeline);
//   - retention: a full retention pass (enforceRetention until no batch is left) deleting the
//     logs and artifacts of every build past 30 days, against a raw DELETE of the same rows in
//     one transaction on a copy of the same database.
// `bun run scripts/bench/schedules-retention.ts` prints the rows; scripts/bench.ts records them
// (scenario "schedules-retention").
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { openDatabase, type Db } from "../../lib/db/client.ts";
import { migrate } from "../../lib/db/migrate.ts";
import { loadConfig } from "../../lib/daemon/config.ts";
import { createSecretBox } from "../../lib/crypto/secret-box.ts";
import { EventBus } from "../../lib/daemon/events.ts";
import { silentLogger } from "../../lib/daemon/log.ts";
import { MetricsRegistry } from "../../lib/daemon/metrics.ts";
import { insertSchedule, runDueSchedules } from "../../lib/schedules/schedules.ts";
import { enforceRetention } from "../../lib/retention/retention.ts";
import { openObjectStore } from "../../lib/object-store/store.ts";
import { printRows, type BenchRow } from "./row.ts";
import { seedProject } from "./seed-project.ts";

const BUILDS = 100_000;
const PIPELINES = 20;
const LINES_PER_BUILD = 10;
const SCHEDULES = 50;
const DAY = 86_400;
const NOW = 1_900_000_000;

/** Builds spread over 200 days (the newest last), a quarter of them failed, on four branches. */
async function seed(db: Db, dataDir: string): Promise<{ projectId: string; pipelineIds: string[] }> {
  const t = NOW - 400 * DAY;
  // One real build gives the row every seeded build copies (its config snapshot and defaults).
  const { pipelineIds, build } = await seedProject(
    db,
    Array.from({ length: PIPELINES }, (_, i) => `pipeline-${i}`),
    t,
  );
  const raw = new Database(join(dataDir, "roost.db"));
  raw.exec("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;");
  raw.exec("BEGIN");
  const ids = JSON.stringify(pipelineIds);
  // Build n (1 … BUILDS) finished 200 days × (1 − n/BUILDS) ago.
  raw
    .query(
      `INSERT INTO builds (id, project_id, pipeline_id, build_number, branch, commit_sha, config_snapshot, status, trigger_type, queued_at, started_at, finished_at, created_at, updated_at)
     WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     SELECT 'b' || i, 'p', json_extract(?, '$[' || (i % ?) || ']'), i, CASE i % 4 WHEN 0 THEN 'main' WHEN 1 THEN 'develop' ELSE 'feature-' || (i % 50) END,
            printf('%040x', i), (SELECT config_snapshot FROM builds WHERE id = ?), CASE WHEN i % 4 = 3 THEN 'failed' ELSE 'succeeded' END, 'manual',
            ? - CAST(200 * ? * (1.0 - i * 1.0 / ?) AS INTEGER) - 600, ? - CAST(200 * ? * (1.0 - i * 1.0 / ?) AS INTEGER) - 500, ? - CAST(200 * ? * (1.0 - i * 1.0 / ?) AS INTEGER),
            ? - CAST(200 * ? * (1.0 - i * 1.0 / ?) AS INTEGER) - 600, ? - CAST(200 * ? * (1.0 - i * 1.0 / ?) AS INTEGER)
       FROM n`,
    )
    .run(BUILDS, ids, PIPELINES, build.id, NOW, DAY, BUILDS, NOW, DAY, BUILDS, NOW, DAY, BUILDS, NOW, DAY, BUILDS, NOW, DAY, BUILDS);
  raw.query("UPDATE projects SET next_build_number = ? WHERE id = 'p'").run(BUILDS + 1);
  raw
    .query(
      `INSERT INTO build_logs (build_id, seq, job_id, line, step, stream, ts, text)
     WITH RECURSIVE l(s) AS (SELECT 1 UNION ALL SELECT s + 1 FROM l WHERE s < ?)
     SELECT b.id, l.s, 'job', l.s - 1, 'build', 'stdout', COALESCE(b.finished_at, b.created_at), 'Running Gradle task ''assembleRelease''... line ' || l.s || ' ' || printf('%.80c', 'x')
       FROM builds b, l`,
    )
    .run(LINES_PER_BUILD);
  raw.query("INSERT INTO build_log_stats (build_id, last_seq, bytes) SELECT build_id, MAX(seq), SUM(length(text) + 1) FROM build_logs GROUP BY build_id").run();
  raw
    .query(
      "INSERT INTO artifacts (id, build_id, job_id, path, size, sha256, created_at) SELECT 'a' || id, id, 'job', 'app-release.apk', 25000000, printf('%064x', build_number), COALESCE(finished_at, created_at) FROM builds",
    )
    .run();
  raw.exec("COMMIT");
  raw.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  raw.close();
  return { projectId: "p", pipelineIds };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export async function schedulesRetentionRows(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), "roost-bench-retention-"));
  const rows: BenchRow[] = [];
  try {
    const config = loadConfig({ ROOST_DATA_DIR: dir, ROOST_LOG_RETENTION_DAYS: "30", ROOST_ARTIFACT_RETENTION_DAYS: "30", ROOST_KEEP_BUILDS: "0" });
    let db = await openDatabase(config.databaseUrl, undefined, "bun:sqlite");
    await migrate(db, () => NOW - 400 * DAY);
    const started = performance.now();
    const { projectId, pipelineIds } = await seed(db, dir);
    console.log(`seeded ${BUILDS} builds, ${BUILDS * LINES_PER_BUILD} log lines in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    db.close();
    copyFileSync(join(dir, "roost.db"), join(dir, "baseline.db"));
    db = await openDatabase(config.databaseUrl, undefined, "bun:sqlite");

    // 1. One scheduler tick firing SCHEDULES due schedules.
    let clock = NOW - 3600;
    const secrets = await createSecretBox(crypto.getRandomValues(new Uint8Array(32)));
    const ctx = {
      db,
      config,
      clock: { now: () => clock },
      events: new EventBus(),
      log: silentLogger,
      secrets,
      metrics: new MetricsRegistry(),
      objects: openObjectStore(config.objectStore, config.dataDir, silentLogger),
    };
    for (let i = 0; i < SCHEDULES; i++) {
      await insertSchedule(
        db,
        {
          projectId,
          pipelineId: pipelineIds[i % PIPELINES]!,
          createdBy: null,
          cron: "0 2 * * *",
          timezone: "UTC",
          branch: `nightly-${i}`,
          build_when_unchanged: true,
          enabled: true,
        },
        clock,
      );
    }
    clock = NOW;
    await db.execute({ sql: "UPDATE pipeline_schedules SET next_slot_at = ?", args: [NOW - 60] });
    let tickStarted = performance.now();
    const tick = await runDueSchedules(
      ctx,
      SCHEDULES,
      async () => "c".repeat(40),
      async () => ({ kind: "definition" }),
    );
    const tickMs = performance.now() - tickStarted;
    if (tick.built !== SCHEDULES) throw new Error(`the tick built ${tick.built} of ${SCHEDULES} schedules`);
    // An idle tick (nothing due), the one a daemon runs every 15 s almost always.
    const idle: number[] = [];
    for (let i = 0; i < 200; i++) {
      tickStarted = performance.now();
      await runDueSchedules(
        ctx,
        SCHEDULES,
        async () => "c".repeat(40),
        async () => ({ kind: "definition" }),
      );
      idle.push(performance.now() - tickStarted);
    }
    const raw = new Database(join(dir, "baseline.db"), { readonly: true });
    const newest = raw.query("SELECT * FROM builds WHERE pipeline_id = ? ORDER BY build_number DESC LIMIT 1");
    const selectStarted = performance.now();
    for (let i = 0; i < SCHEDULES; i++) newest.get(pipelineIds[i % PIPELINES]!);
    const selectMs = performance.now() - selectStarted;
    const due = raw.query("SELECT * FROM pipeline_schedules WHERE enabled = 1 AND next_slot_at <= ? ORDER BY next_slot_at LIMIT ?");
    const idleBase: number[] = [];
    for (let i = 0; i < 200; i++) {
      const s = performance.now();
      due.all(NOW, SCHEDULES);
      idleBase.push(performance.now() - s);
    }
    raw.close();
    const scenario = `scheduler tick, ${BUILDS.toLocaleString("en-US")} builds in the database`;
    rows.push({
      scenario,
      metric: `one tick firing ${SCHEDULES} due schedules (a build each)`,
      roost: tickMs,
      baseline: selectMs,
      baselineName: `${SCHEDULES} bare indexed SELECTs of a pipeline's newest build`,
      higherIsBetter: false,
      unit: "ms",
    });
    rows.push({
      scenario,
      metric: "an idle tick (nothing due), median of 200",
      roost: median(idle) * 1000,
      baseline: median(idleBase) * 1000,
      baselineName: "the bare indexed SELECT of due schedules",
      higherIsBetter: false,
      unit: "µs",
    });

    // 2. A full retention pass: every build finished more than 30 days ago, but the latest success of each branch.
    let batches = 0;
    const pass = { logs: 0, artifacts: 0, log_lines: 0 };
    const retentionStarted = performance.now();
    const batchMs: number[] = [];
    for (;;) {
      const b = performance.now();
      const r = await enforceRetention(ctx);
      batchMs.push(performance.now() - b);
      batches++;
      pass.logs += r.logs;
      pass.artifacts += r.artifacts;
      pass.log_lines += r.log_lines;
      if (!r.more) break;
    }
    const retentionMs = performance.now() - retentionStarted;
    const deleted = (await db.execute("SELECT id FROM builds WHERE logs_deleted_at IS NOT NULL")).rows.map((r) => String(r.id));
    db.close();

    const base = new Database(join(dir, "baseline.db"));
    base.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;");
    base.exec("CREATE TEMP TABLE gone (id TEXT PRIMARY KEY)");
    const insertGone = base.query("INSERT INTO gone VALUES (?)");
    for (const id of deleted) insertGone.run(id);
    const deleteStarted = performance.now();
    base.exec("BEGIN");
    const lines = base.query("DELETE FROM build_logs WHERE build_id IN (SELECT id FROM gone)").run().changes;
    base.query("DELETE FROM artifacts WHERE build_id IN (SELECT id FROM gone)").run();
    base.exec("COMMIT");
    const deleteMs = performance.now() - deleteStarted;
    base.close();
    if (lines !== pass.log_lines) throw new Error(`the baseline deleted ${lines} lines, retention ${pass.log_lines}`);
    const rScenario = `retention, ${BUILDS.toLocaleString("en-US")} builds (${pass.logs.toLocaleString("en-US")} past 30 days: ${pass.log_lines.toLocaleString("en-US")} log lines, ${pass.artifacts.toLocaleString("en-US")} artifacts)`;
    rows.push({
      scenario: rScenario,
      metric: `full pass (${batches} batches of at most 500 builds, one transaction each)`,
      roost: retentionMs,
      baseline: deleteMs,
      baselineName: "raw DELETE of the same rows in one transaction",
      higherIsBetter: false,
      unit: "ms",
    });
    rows.push({
      scenario: rScenario,
      metric: "longest batch (the longest the writer is held)",
      roost: Math.max(...batchMs),
      baseline: deleteMs,
      baselineName: "the raw DELETE, which holds it for all of them",
      higherIsBetter: false,
      unit: "ms",
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

if (import.meta.main) printRows(await schedulesRetentionRows());
