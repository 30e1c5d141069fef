// Test results at scale (docs/test-results.md "How it is stored"): one pipeline whose builds each
// report 10,000 tests, on a bun:sqlite file as the daemon opens it.
//   - reading a 10,000-test `flutter test --machine` report (lib/test-results/read.ts) against
//     JSON.parse of the same lines;
//   - recording those 10,000 results for a build (lib/test-results/record.ts: identities, results,
//     the flaky check against the commit's other builds, the summary) against raw prepared INSERTs
//     of the same 10,000 result rows in one transaction, first on an empty database, then with a
//     million results stored;
//   - one test's history (GET /v1/pipelines/{id}/tests/{key}: 50 results of a branch) and a build's
//     first page of cases (failures first) with 1,010,000 results stored, against the same reads
//     with half as many stored (each index range must not grow with the table) and, for the
//     history, against the bare index range read through bun:sqlite (what Roost adds).
// `bun run scripts/bench/test-results.ts` prints the rows; scripts/bench.ts records them
// (scenario "test-results").
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { openDatabase, type Db } from "../../lib/db/client.ts";
import { migrate } from "../../lib/db/migrate.ts";
import { loadConfig } from "../../lib/daemon/config.ts";
import { EventBus } from "../../lib/daemon/events.ts";
import { silentLogger } from "../../lib/daemon/log.ts";
import { createBuild } from "../../lib/builds/create.ts";
import { findBuild, type Build } from "../../lib/builds/store.ts";
import { readReport } from "../../lib/test-results/read.ts";
import { recordReport, testKey } from "../../lib/test-results/record.ts";
import { listCases, testHistory } from "../../lib/test-results/queries.ts";
import { printRows, type BenchRow } from "./row.ts";
import { seedProject } from "./seed-project.ts";

const CASES = 10_000;
const STORED_BUILDS = 100;
const NOW = 1_900_000_000;

/** A `flutter test --machine` run of CASES tests in 100 files, 1 % failing with a message and a stack. */
function machineReport(workspace: string): string {
  const lines: string[] = [JSON.stringify({ protocolVersion: "0.1.1", runnerVersion: "1.25.0", pid: 1, type: "start", time: 0 })];
  let time = 1;
  for (let f = 0; f < 100; f++) {
    lines.push(JSON.stringify({ suite: { id: f * 1000, platform: "vm", path: `${workspace}/test/feature_${f}_test.dart` }, type: "suite", time }));
    for (let t = 0; t < CASES / 100; t++) {
      const id = f * 1000 + t + 1;
      lines.push(
        JSON.stringify({
          test: {
            id,
            name: `feature ${f} behaves in case ${t}`,
            suiteID: f * 1000,
            groupIDs: [],
            line: t + 3,
            column: 3,
            url: `file://${workspace}/test/feature_${f}_test.dart`,
          },
          type: "testStart",
          time: time++,
        }),
      );
      const failing = (f * 100 + t) % 100 === 7;
      if (failing)
        lines.push(
          JSON.stringify({
            testID: id,
            error: `Expected: <${t}>\n  Actual: <${t + 1}>\n`,
            stackTrace: `package:matcher  expect\ntest/feature_${f}_test.dart ${t + 4}:5  main.<fn>\n`,
            isFailure: true,
            type: "error",
            time,
          }),
        );
      lines.push(JSON.stringify({ testID: id, result: failing ? "failure" : "success", skipped: false, hidden: false, type: "testDone", time: time++ }));
    }
  }
  lines.push(JSON.stringify({ success: false, type: "done", time }));
  return lines.join("\n") + "\n";
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** A new build of the pipeline (as a re-run would be, on another commit). */
async function newBuild(db: Db, pipelineId: string, n: number): Promise<Build> {
  const ctx = { db, clock: { now: () => NOW }, events: new EventBus(), log: silentLogger };
  const { build } = await createBuild(ctx as never, {
    pipelineId,
    branch: "main",
    commitSha: n.toString(16).padStart(40, "0"),
    triggerType: "manual",
    concurrencyKey: null,
  });
  return build;
}

/** `count` more builds (numbered from 1001 + `from`) of CASES results each, the same tests every time, straight into the tables. */
function seedBuilds(file: string, pipelineId: string, templateBuildId: string, from: number, count: number): void {
  const raw = new Database(file);
  raw.exec("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;");
  raw.exec("BEGIN");
  raw
    .query(
      `INSERT INTO builds (id, project_id, pipeline_id, build_number, branch, commit_sha, config_snapshot, status, trigger_type, queued_at, started_at, finished_at, created_at, updated_at)
     WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     SELECT 'seed' || i, 'p', ?, 1000 + i, 'main', printf('%040x', 1000 + i), (SELECT config_snapshot FROM builds WHERE id = ?), 'failed', 'manual', ?, ?, ?, ?, ? FROM n`,
    )
    .run(from + 1, from + count, pipelineId, templateBuildId, NOW, NOW, NOW, NOW, NOW);
  raw.query("UPDATE projects SET next_build_number = ? WHERE id = 'p'").run(1000 + from + count + 1);
  const insertTest = raw.query(
    "INSERT OR IGNORE INTO tests (pipeline_id, test_key, suite, name, runs, failures, first_seen_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
  );
  for (let f = 0; f < 100; f++) {
    for (let t = 0; t < CASES / 100; t++) {
      const suite = `test/feature_${f}_test.dart`;
      const name = `feature ${f} behaves in case ${t}`;
      insertTest.run(pipelineId, testKey(suite, name), suite, name, STORED_BUILDS, (f * 100 + t) % 100 === 7 ? STORED_BUILDS : 0, NOW, NOW);
    }
  }
  raw
    .query(
      `INSERT INTO test_results (build_id, seq, test_id, lane, build_number, status, flaky, duration_ms, message, stack, output, file, line)
     SELECT b.id, t.id, t.id, 'main', b.build_number, CASE WHEN t.failures > 0 THEN 'failed' ELSE 'passed' END, 0, 12,
            CASE WHEN t.failures > 0 THEN 'Expected: <1>' || char(10) || '  Actual: <2>' END, CASE WHEN t.failures > 0 THEN 'package:matcher  expect' END, NULL, t.suite, 3
     FROM builds b, tests t WHERE b.id LIKE 'seed%' AND b.build_number > ? ORDER BY b.build_number, t.id`,
    )
    .run(1000 + from);
  raw
    .query(
      `INSERT INTO build_test_summaries (build_id, pipeline_id, lane, commit_sha, build_number, total, passed, failed, updated_at)
     SELECT b.id, b.pipeline_id, 'main', b.commit_sha, b.build_number, ?, ?, ?, ? FROM builds b WHERE b.id LIKE 'seed%' AND b.build_number > ?`,
    )
    .run(CASES, CASES - CASES / 100, CASES / 100, NOW, 1000 + from);
  raw.exec("COMMIT");
  raw.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  raw.close();
}

/** Raw prepared INSERTs of the same result rows in one transaction: what storing them costs at least. */
function rawInserts(file: string, buildId: string, buildNumber: number, seqFrom: number): number {
  const raw = new Database(file);
  raw.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;");
  const ids = raw.query("SELECT id FROM tests ORDER BY id LIMIT ?").all(CASES) as { id: number }[];
  const insert = raw.query(
    "INSERT INTO test_results (build_id, seq, test_id, lane, build_number, status, flaky, duration_ms, message, stack, output, file, line) VALUES (?, ?, ?, 'main', ?, ?, 0, 12, ?, ?, NULL, ?, ?)",
  );
  const started = performance.now();
  raw.exec("BEGIN");
  ids.forEach((row, i) =>
    insert.run(
      buildId,
      seqFrom + i,
      row.id,
      buildNumber,
      i % 100 === 7 ? "failed" : "passed",
      i % 100 === 7 ? "Expected: <1>\n  Actual: <2>\n" : null,
      i % 100 === 7 ? "package:matcher  expect" : null,
      "test/feature_0_test.dart",
      3,
    ),
  );
  raw.exec("COMMIT");
  const ms = performance.now() - started;
  raw.close();
  return ms;
}

export async function testResultsRows(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), "roost-bench-tests-"));
  const rows: BenchRow[] = [];
  try {
    const workspace = "/home/ci/roost/jobs/bench";
    const report = machineReport(workspace);
    const bytes = new TextEncoder().encode(report);
    const stream = () => new Blob([bytes]).stream();
    const scenario = (stored: string) =>
      `test results: 10,000 tests a build (${(bytes.length / 1024 / 1024).toFixed(1)} MB of flutter test --machine), ${stored}`;

    // 1. Reading the report.
    const reads: number[] = [];
    const parses: number[] = [];
    let read = await readReport(stream(), { path: "build/test-results/flutter.json", workspace, maxBytes: 32 << 20 });
    for (let i = 0; i < 5; i++) {
      let s = performance.now();
      read = await readReport(stream(), { path: "build/test-results/flutter.json", workspace, maxBytes: 32 << 20 });
      reads.push(performance.now() - s);
      s = performance.now();
      for (const line of report.split("\n")) if (line) JSON.parse(line);
      parses.push(performance.now() - s);
    }
    if (read.report?.cases.length !== CASES) throw new Error(`read ${read.report?.cases.length} cases`);
    rows.push({
      scenario: scenario("any database"),
      metric: "read the report (streamed, bounded), median of 5",
      roost: median(reads),
      baseline: median(parses),
      baselineName: "JSON.parse of its lines",
      higherIsBetter: false,
      unit: "ms",
    });

    // 2. Recording it on an empty database, then with a million results stored.
    const config = loadConfig({ ROOST_DATA_DIR: dir });
    let db = await openDatabase(config.databaseUrl, undefined, "bun:sqlite");
    await migrate(db, () => NOW);
    const { pipelineIds, build: first } = await seedProject(db, ["android"], NOW - 86_400);
    const pipelineId = pipelineIds[0]!;
    let started = performance.now();
    await recordReport(db, { build: first, jobId: "job", path: "build/test-results/flutter.json", read, declaredBytes: null, now: NOW });
    const recordEmpty = performance.now() - started;
    db.close();
    // The baseline inserts as many rows again, on a copy of that database.
    copyFileSync(join(dir, "roost.db"), join(dir, "empty-baseline.db"));
    const rawEmpty = rawInserts(join(dir, "empty-baseline.db"), first.id, first.build_number, 100_000);
    rows.push({
      scenario: scenario("empty database"),
      metric: "record one build's results (one transaction)",
      roost: recordEmpty,
      baseline: rawEmpty,
      baselineName: "raw prepared INSERTs of the 10,000 result rows in one transaction",
      higherIsBetter: false,
      unit: "ms",
    });

    // Reads with half the builds stored, then all of them: each read is an index range, so twice
    // the stored results must not cost more. Every test has 50 results in its lane either way.
    const timeHistory = async (d: Db, testIds: number[]): Promise<number> => {
      const samples: number[] = [];
      for (let i = 0; i < 200; i++) {
        const s = performance.now();
        const page = await testHistory(d, testIds[(i * 37) % testIds.length]!, "main", { limit: 50, before: undefined });
        samples.push(performance.now() - s);
        if (page.results.length !== 50) throw new Error(`history of ${page.results.length} results`);
      }
      return median(samples);
    };
    const timeCases = async (d: Db, build: Build): Promise<number> => {
      const samples: number[] = [];
      for (let i = 0; i < 20; i++) {
        const s = performance.now();
        await listCases(d, build, { buildId: build.id, statuses: [], q: undefined, limit: 50, cursor: undefined });
        samples.push(performance.now() - s);
      }
      return median(samples);
    };
    const half = STORED_BUILDS / 2;
    let seedStarted = performance.now();
    seedBuilds(join(dir, "roost.db"), pipelineId, first.id, 0, half);
    console.log(`seeded ${half} builds of ${CASES} results in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`);
    db = await openDatabase(config.databaseUrl, undefined, "bun:sqlite");
    const testIds = (await db.execute("SELECT id FROM tests ORDER BY id")).rows.map((r) => Number(r.id));
    const historyHalf = await timeHistory(db, testIds);
    const casesHalf = await timeCases(db, (await findBuild(db, `seed${half}`))!);
    db.close();
    seedStarted = performance.now();
    seedBuilds(join(dir, "roost.db"), pipelineId, first.id, half, half);
    console.log(
      `seeded ${half} more (${((STORED_BUILDS + 1) * CASES).toLocaleString("en-US")} results stored) in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`,
    );
    db = await openDatabase(config.databaseUrl, undefined, "bun:sqlite");
    const historyBig = await timeHistory(db, testIds);
    const latest = (await findBuild(db, `seed${STORED_BUILDS}`))!;
    const casesBig = await timeCases(db, latest);
    // The least a history read can cost: the same index range through bun:sqlite directly, with no join.
    const bare = new Database(join(dir, "roost.db"), { readonly: true });
    const range = bare.query(
      "SELECT build_id, build_number, status, flaky, duration_ms, message FROM test_results WHERE test_id = ? AND lane = 'main' ORDER BY build_number DESC LIMIT 50",
    );
    const bareSamples: number[] = [];
    for (let i = 0; i < 200; i++) {
      const s = performance.now();
      range.all(testIds[(i * 37) % testIds.length]!);
      bareSamples.push(performance.now() - s);
    }
    bare.close();
    const big = scenario(`${((STORED_BUILDS + 1) * CASES).toLocaleString("en-US")} results stored`);
    const halfStored = `${((half + 1) * CASES).toLocaleString("en-US")} results stored`;
    rows.push({
      scenario: big,
      metric: "one test's history (50 results of a branch), median of 200",
      roost: historyBig * 1000,
      baseline: historyHalf * 1000,
      baselineName: `the same with ${halfStored}`,
      higherIsBetter: false,
      unit: "µs",
    });
    rows.push({
      scenario: big,
      metric: "one test's history (50 results of a branch), median of 200",
      roost: historyBig * 1000,
      baseline: median(bareSamples) * 1000,
      baselineName: "the bare index range through bun:sqlite (no join, no mapping)",
      higherIsBetter: false,
      unit: "µs",
    });
    rows.push({
      scenario: big,
      metric: "a build's first page of cases (50, failures first, each with its last results), median of 20",
      roost: casesBig,
      baseline: casesHalf,
      baselineName: `the same with ${halfStored}`,
      higherIsBetter: false,
      unit: "ms",
    });

    const next = await newBuild(db, pipelineId, 5000);
    started = performance.now();
    await recordReport(db, { build: next, jobId: "job", path: "build/test-results/flutter.json", read, declaredBytes: null, now: NOW });
    const recordBig = performance.now() - started;
    db.close();
    const rawBig = rawInserts(join(dir, "roost.db"), first.id, first.build_number, 200_000);
    rows.push({
      scenario: big,
      metric: "record one build's results (one transaction)",
      roost: recordBig,
      baseline: rawBig,
      baselineName: "raw prepared INSERTs of the 10,000 result rows in one transaction",
      higherIsBetter: false,
      unit: "ms",
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

if (import.meta.main) printRows(await testResultsRows());
