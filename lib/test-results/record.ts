// Recording what a report said for a build (docs/test-results.md "Storage"), in one write
// transaction per report: the report's row, each case's test identity (created on first sight)
// and result, flaky marks, coverage per file, analyzer annotations, and the build's summary
// counts recomputed. Bounds per build stop a runner from filling the database: past them the
// rest is dropped and the report's row says so.
import type { Db, Executor, Transaction } from "../db/client.ts";
import { all, one } from "../db/client.ts";
import { newId } from "../auth/secrets.ts";
import { sha256Hex } from "../crypto/hash.ts";
import type { Build } from "../builds/store.ts";
import type { ParsedReport, TestCase } from "./report.ts";
import type { ReadResult } from "./read.ts";

export const MAX_CASES_PER_BUILD = 50_000;
export const MAX_COVERAGE_FILES_PER_BUILD = 20_000;
export const MAX_ANNOTATIONS_PER_BUILD = 2_000;

/** Rows per multi-row INSERT: 100 rows of 13 values stay far below SQLite's 32766 parameters. */
const BATCH = 100;

export interface RecordedReport {
  id: string;
  path: string;
  format: string | null;
  status: "read" | "partial" | "rejected";
  problems: string[];
  bytes: number;
  cases: number;
}

/** A test's stable key in its pipeline: 16 hex digits of SHA-256 over its suite and name. */
export function testKey(suite: string, name: string): string {
  return sha256Hex(`${suite}\n${name}`).slice(0, 16);
}

/** The line of builds a build's results are compared within (see schema.sql migration 20). */
export function laneOf(build: Pick<Build, "branch" | "trigger_event" | "context">): string {
  const pr = (build.context as { pull_request?: unknown } | null)?.pull_request;
  return build.trigger_event === "pull_request" && typeof pr === "number" ? `pr:${pr}` : build.branch;
}

const isFailure = (s: TestCase["status"]) => s === "failed" || s === "error";

export async function recordReport(
  db: Db,
  o: { build: Build; jobId: string; path: string; read: ReadResult; declaredBytes: number | null; now: number },
): Promise<RecordedReport> {
  return db.transaction((tx) => recordInTransaction(tx, o));
}

async function recordInTransaction(
  tx: Transaction,
  o: { build: Build; jobId: string; path: string; read: ReadResult; declaredBytes: number | null; now: number },
): Promise<RecordedReport> {
  const { build, read, now } = o;
  const report = read.report;
  const problems = report
    ? [...report.problems]
    : [
        `The format of ${o.path} was not recognised (expected the Dart JSON reporter's output, JUnit XML, lcov or dart analyze --format=machine); it was not read.`,
      ];
  if (o.declaredBytes !== null && o.declaredBytes > read.bytes && !read.cut) {
    problems.unshift(`The file is ${o.declaredBytes} bytes; only its first ${read.bytes} bytes were uploaded and read.`);
  }
  await ensureSummary(tx, build, now);
  let cases = report?.cases ?? [];
  let coverage = report?.coverage ?? [];
  let annotations = report?.annotations ?? [];
  if (cases.length) {
    const room = MAX_CASES_PER_BUILD - (await count(tx, "SELECT COUNT(*) AS n FROM test_results WHERE build_id = ?", build.id));
    if (cases.length > room) {
      problems.push(`The build holds at most ${MAX_CASES_PER_BUILD} test results: ${cases.length - Math.max(0, room)} from this report were not kept.`);
      cases = cases.slice(0, Math.max(0, room));
    }
  }
  if (coverage.length) {
    const room = MAX_COVERAGE_FILES_PER_BUILD - (await count(tx, "SELECT COUNT(*) AS n FROM coverage_files WHERE build_id = ?", build.id));
    if (coverage.length > room) {
      problems.push(
        `The build holds coverage of at most ${MAX_COVERAGE_FILES_PER_BUILD} files: ${coverage.length - Math.max(0, room)} from this report were not kept.`,
      );
      coverage = coverage.slice(0, Math.max(0, room));
    }
  }
  if (annotations.length) {
    const room = MAX_ANNOTATIONS_PER_BUILD - (await count(tx, "SELECT COUNT(*) AS n FROM build_annotations WHERE build_id = ?", build.id));
    if (annotations.length > room) {
      problems.push(
        `The build holds at most ${MAX_ANNOTATIONS_PER_BUILD} analyzer issues: ${annotations.length - Math.max(0, room)} from this report were not kept.`,
      );
      annotations = annotations.slice(0, Math.max(0, room));
    }
  }
  const status: RecordedReport["status"] = !report ? "rejected" : problems.length ? "partial" : "read";
  const recorded: RecordedReport = { id: newId(), path: o.path, format: report?.format ?? null, status, problems, bytes: read.bytes, cases: cases.length };
  await tx.execute(
    "INSERT INTO test_reports (id, build_id, job_id, path, format, status, problems, bytes, cases, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [recorded.id, build.id, o.jobId, o.path, recorded.format, status, JSON.stringify(problems), read.bytes, cases.length, now],
  );
  if (cases.length) await insertCases(tx, build, cases, now);
  if (coverage.length) await insertCoverage(tx, build.id, coverage);
  if (annotations.length) await insertAnnotations(tx, build.id, annotations);
  await refreshSummary(tx, build.id, now);
  return recorded;
}

/** A report the daemon would not read at all (too many for the build), recorded so the build says so. */
export async function recordRejectedReport(
  db: Db,
  o: { build: Build; jobId: string; path: string; problem: string; bytes: number; now: number },
): Promise<RecordedReport> {
  return db.transaction(async (tx) => {
    await ensureSummary(tx, o.build, o.now);
    const recorded: RecordedReport = { id: newId(), path: o.path, format: null, status: "rejected", problems: [o.problem], bytes: o.bytes, cases: 0 };
    await tx.execute(
      "INSERT INTO test_reports (id, build_id, job_id, path, format, status, problems, bytes, cases, created_at) VALUES (?, ?, ?, ?, NULL, 'rejected', ?, ?, 0, ?)",
      [recorded.id, o.build.id, o.jobId, o.path, JSON.stringify(recorded.problems), o.bytes, o.now],
    );
    return recorded;
  });
}

async function count(db: Executor, sql: string, id: string): Promise<number> {
  return Number((await one(db, sql, [id]))?.n ?? 0);
}

async function ensureSummary(tx: Transaction, build: Build, now: number): Promise<void> {
  await tx.execute(
    "INSERT INTO build_test_summaries (build_id, pipeline_id, lane, commit_sha, build_number, updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (build_id) DO NOTHING",
    [build.id, build.pipeline_id, laneOf(build), build.commit_sha, build.build_number, now],
  );
}

/**
 * 1. find or create each test's identity, counting this run into its runs and failures;
 * 2. mark flaky the results that disagree (one passed, one failed) with another build of the
 *    same commit in this pipeline (a re-run), and count them on the test;
 * 3. insert the results after the build's last one.
 */
async function insertCases(tx: Transaction, build: Build, cases: TestCase[], now: number): Promise<void> {
  const keys = cases.map((c) => testKey(c.suite, c.name));
  const perKey = new Map<string, { c: TestCase; runs: number; failures: number }>();
  cases.forEach((c, i) => {
    const entry = perKey.get(keys[i]!) ?? { c, runs: 0, failures: 0 };
    if (c.status !== "skipped") entry.runs++;
    if (isFailure(c.status)) entry.failures++;
    perKey.set(keys[i]!, entry);
  });
  const ids = new Map<string, number>();
  const unique = [...perKey];
  for (let i = 0; i < unique.length; i += BATCH) {
    const chunk = unique.slice(i, i + BATCH);
    const rows = await tx.execute(
      `INSERT INTO tests (pipeline_id, test_key, suite, name, runs, failures, first_seen_at, last_seen_at) VALUES ${chunk.map(() => "(?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}
       ON CONFLICT (pipeline_id, test_key) DO UPDATE SET runs = runs + excluded.runs, failures = failures + excluded.failures, last_seen_at = excluded.last_seen_at
       RETURNING id, test_key`,
      chunk.flatMap(([key, e]) => [build.pipeline_id, key, e.c.suite, e.c.name, e.runs, e.failures, now, now]),
    );
    for (const row of rows.rows) ids.set(String(row.test_key), Number(row.id));
  }

  // Results of the same tests in other builds of this commit: usually none (no re-run).
  const earlier = await all(tx, "SELECT build_id FROM build_test_summaries WHERE pipeline_id = ? AND commit_sha = ? AND build_id != ?", [
    build.pipeline_id,
    build.commit_sha,
    build.id,
  ]);
  const seen = new Map<number, { passed: boolean; failed: boolean }>();
  for (const { build_id } of earlier) {
    for (const row of await all(tx, "SELECT test_id, status FROM test_results WHERE build_id = ?", [String(build_id)])) {
      const s = seen.get(Number(row.test_id)) ?? { passed: false, failed: false };
      if (row.status === "passed") s.passed = true;
      if (row.status === "failed" || row.status === "error") s.failed = true;
      seen.set(Number(row.test_id), s);
    }
  }
  const flaky = cases.map((c, i) => {
    const before = seen.get(ids.get(keys[i]!)!);
    return before !== undefined && ((c.status === "passed" && before.failed) || (isFailure(c.status) && before.passed));
  });
  const flakyIds = [...new Set(cases.map((_, i) => ids.get(keys[i]!)!).filter((_, i) => flaky[i]))];
  for (let i = 0; i < flakyIds.length; i += BATCH) {
    const chunk = flakyIds.slice(i, i + BATCH);
    await tx.execute(
      `UPDATE tests SET flaky_runs = flaky_runs + 1, last_flaky_at = ?, last_flaky_build_id = ? WHERE id IN (${chunk.map(() => "?").join(", ")})`,
      [now, build.id, ...chunk],
    );
  }

  const lane = laneOf(build);
  let seq = Number((await one(tx, "SELECT COALESCE(MAX(seq), 0) AS n FROM test_results WHERE build_id = ?", [build.id]))?.n ?? 0);
  for (let i = 0; i < cases.length; i += BATCH) {
    const chunk = cases.slice(i, i + BATCH);
    await tx.execute(
      `INSERT INTO test_results (build_id, seq, test_id, lane, build_number, status, flaky, duration_ms, message, stack, output, file, line) VALUES ${chunk.map(() => "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
      chunk.flatMap((c, j) => [
        build.id,
        ++seq,
        ids.get(keys[i + j]!)!,
        lane,
        build.build_number,
        c.status,
        flaky[i + j] ? 1 : 0,
        c.duration_ms,
        c.message,
        c.stack,
        c.output,
        c.file,
        c.line,
      ]),
    );
  }
}

async function insertCoverage(tx: Transaction, buildId: string, files: ParsedReport["coverage"]): Promise<void> {
  for (let i = 0; i < files.length; i += BATCH) {
    const chunk = files.slice(i, i + BATCH);
    // Two reports covering one file (two packages' runs merged): the larger counts win.
    await tx.execute(
      `INSERT INTO coverage_files (build_id, path, lines_found, lines_hit) VALUES ${chunk.map(() => "(?, ?, ?, ?)").join(", ")}
       ON CONFLICT (build_id, path) DO UPDATE SET lines_found = MAX(lines_found, excluded.lines_found), lines_hit = MAX(lines_hit, excluded.lines_hit)`,
      chunk.flatMap((f) => [buildId, f.path, f.lines_found, f.lines_hit]),
    );
  }
}

async function insertAnnotations(tx: Transaction, buildId: string, list: ParsedReport["annotations"]): Promise<void> {
  let seq = Number((await one(tx, "SELECT COALESCE(MAX(seq), 0) AS n FROM build_annotations WHERE build_id = ?", [buildId]))?.n ?? 0);
  for (let i = 0; i < list.length; i += BATCH) {
    const chunk = list.slice(i, i + BATCH);
    await tx.execute(
      `INSERT INTO build_annotations (build_id, seq, severity, file, line, col, code, message) VALUES ${chunk.map(() => "(?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
      chunk.flatMap((a) => [buildId, ++seq, a.severity, a.file, a.line, a.column, a.code, a.message]),
    );
  }
}

async function refreshSummary(tx: Transaction, buildId: string, now: number): Promise<void> {
  await tx.execute(
    `UPDATE build_test_summaries SET
       (total, passed, failed, errored, skipped, flaky, duration_ms) = (
         SELECT COUNT(*), COALESCE(SUM(status = 'passed'), 0), COALESCE(SUM(status = 'failed'), 0), COALESCE(SUM(status = 'error'), 0),
                COALESCE(SUM(status = 'skipped'), 0), COALESCE(SUM(flaky), 0), COALESCE(SUM(duration_ms), 0)
         FROM test_results WHERE build_id = ?1),
       (lines_found, lines_hit) = (SELECT SUM(lines_found), SUM(lines_hit) FROM coverage_files WHERE build_id = ?1),
       annotations = (SELECT COUNT(*) FROM build_annotations WHERE build_id = ?1),
       updated_at = ?2
     WHERE build_id = ?1`,
    [buildId, now],
  );
}

/** Whether the build already has a report at this path, and how many it has (both bounded per build). */
export async function reportsOfBuild(db: Executor, buildId: string, path: string): Promise<{ exists: boolean; count: number }> {
  const exists = (await one(db, "SELECT 1 FROM test_reports WHERE build_id = ? AND path = ?", [buildId, path])) !== null;
  const count = Number((await one(db, "SELECT COUNT(*) AS n FROM test_reports WHERE build_id = ?", [buildId]))?.n ?? 0);
  return { exists, count };
}
