// Reading test results back (docs/test-results.md): every question is an index range, so the
// answer costs the same at a thousand stored results as at a million:
//   a build's cases          test_results primary key (build_id, seq)
//   one test's history       test_results_history (test_id, lane, build_number)
//   a pipeline's flaky tests tests_flaky (pipeline_id, last_flaky_at)
//   coverage baseline        build_test_summaries_lane (pipeline_id, lane, build_number)
import type { z } from "zod";
import type { Executor, Row } from "../db/client.ts";
import { all, likePattern, num, numOrNull, one, readInPieces, str, strOrNull } from "../db/client.ts";
import type { Build } from "../builds/store.ts";
import type { CaseStatus, CoverageAnswer, HistoryEntry, TestCaseResource, TestResource, TestSummary, TrendPoint } from "./schema.ts";
import type { TestReportResource } from "../runners/protocol-wire.ts";
import { laneOf, MAX_ANNOTATIONS_PER_BUILD } from "./record.ts";

type Status = z.output<typeof CaseStatus>;
const FAILED = new Set<Status>(["failed", "error"]);

/** "123 passed, 2 failed, 1 skipped" (errors count as failed here; the summary keeps them apart). */
export function summaryText(s: { total: number; passed: number; failed: number; errored: number; skipped: number }): string {
  if (s.total === 0) return "no tests";
  const failures = s.failed + s.errored;
  return [`${s.passed} passed`, failures ? `${failures} failed` : null, s.skipped ? `${s.skipped} skipped` : null].filter(Boolean).join(", ");
}

/** The commit status's sentence: "2 of 125 tests failed", "125 tests passed". */
export function statusSentence(s: { total: number; passed: number; failed: number; errored: number; skipped: number }): string | null {
  if (s.total === 0) return null;
  const failures = s.failed + s.errored;
  if (failures) return `${failures} of ${s.total} test${s.total === 1 ? "" : "s"} failed`;
  return `${s.passed} test${s.passed === 1 ? "" : "s"} passed${s.skipped ? `, ${s.skipped} skipped` : ""}`;
}

const percent = (hit: number, found: number) => (found > 0 ? Math.round((hit / found) * 10000) / 100 : 0);

function toSummary(row: Row): z.output<typeof TestSummary> {
  const counts = {
    total: num(row, "total"),
    passed: num(row, "passed"),
    failed: num(row, "failed"),
    errored: num(row, "errored"),
    skipped: num(row, "skipped"),
  };
  const found = numOrNull(row, "lines_found");
  return {
    ...counts,
    flaky: num(row, "flaky"),
    duration_ms: num(row, "duration_ms"),
    coverage_percent: found === null ? null : percent(num(row, "lines_hit"), found),
    annotations: num(row, "annotations"),
    text: summaryText(counts),
  };
}

export async function summaryOf(db: Executor, buildId: string): Promise<z.output<typeof TestSummary> | null> {
  const row = await one(db, "SELECT * FROM build_test_summaries WHERE build_id = ?", [buildId]);
  return row ? toSummary(row) : null;
}

export interface FailedCase {
  seq: number;
  suite: string;
  name: string;
  status: Status;
  message: string | null;
  stack: string | null;
  file: string | null;
  line: number | null;
}

/**
 * A build's failed and errored results in report order, at most `limit` (for check runs and
 * notifications). 200 of the longest (names, a 4,000-character message, a 16,000-character stack;
 * 3 bytes a character when not ASCII) pass what a libSQL server answers at once (10 MB): then they
 * are read in smaller requests.
 */
export async function failedCases(db: Executor, buildId: string, limit: number): Promise<FailedCase[]> {
  const rows = await readInPieces(limit, (count, last: Row | undefined) =>
    all(
      db,
      "SELECT r.seq, r.status, r.message, r.stack, r.file, r.line, t.suite, t.name FROM test_results r JOIN tests t ON t.id = r.test_id WHERE r.build_id = +? AND r.status IN ('failed', 'error') AND r.seq > ? ORDER BY r.seq LIMIT +?",
      [buildId, last ? num(last, "seq") : 0, count],
    ),
  );
  return rows.map((r) => ({
    seq: num(r, "seq"),
    suite: str(r, "suite"),
    name: str(r, "name"),
    status: str(r, "status") as Status,
    message: strOrNull(r, "message"),
    stack: strOrNull(r, "stack"),
    file: strOrNull(r, "file"),
    line: numOrNull(r, "line"),
  }));
}

/** Where people read a build's tests in the web app. */
export function testsPageUrl(baseUrl: string, build: { project_id: string; id: string }): string {
  return `${baseUrl}/projects/${build.project_id}/builds/${build.id}?tab=tests`;
}

/** Builds as lists show them: each with its test summary. */
export async function withTestSummaries<T extends { id: string }>(
  db: Executor,
  builds: T[],
): Promise<(T & { test_summary: z.output<typeof TestSummary> | null })[]> {
  const summaries = await summariesOf(
    db,
    builds.map((b) => b.id),
  );
  return builds.map((b) => ({ ...b, test_summary: summaries.get(b.id) ?? null }));
}

/** The summaries of a page of builds, for lists. */
export async function summariesOf(db: Executor, buildIds: string[]): Promise<Map<string, z.output<typeof TestSummary>>> {
  const out = new Map<string, z.output<typeof TestSummary>>();
  if (buildIds.length === 0) return out;
  for (const row of await all(db, `SELECT * FROM build_test_summaries WHERE build_id IN (${buildIds.map(() => "?").join(", ")})`, buildIds))
    out.set(str(row, "build_id"), toSummary(row));
  return out;
}

/**
 * A build's test reports by path, every one: TEST_REPORTS_PER_BUILD are read, and each upload past
 * them is recorded too, as rejected, with no count limit (a path of up to 500 characters each):
 * thousands pass what a libSQL server answers at once (10 MB), and are then read in smaller
 * requests, each after the last path read.
 */
export async function listReports(db: Executor, buildId: string): Promise<z.output<typeof TestReportResource>[]> {
  const rows = await readInPieces(Infinity, (count, last: Row | undefined) =>
    all(db, "SELECT * FROM test_reports WHERE build_id = +? AND path > +? ORDER BY path LIMIT +?", [buildId, last ? str(last, "path") : "", count]),
  );
  return rows.map((r) => ({
    id: str(r, "id"),
    path: str(r, "path"),
    format: strOrNull(r, "format") as z.output<typeof TestReportResource>["format"],
    status: str(r, "status") as "read" | "partial" | "rejected",
    problems: JSON.parse(str(r, "problems")) as string[],
    bytes: num(r, "bytes"),
    cases: num(r, "cases"),
  }));
}

const SEVERITY_RANK = "(CASE severity WHEN 'error' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END)";

/**
 * A build's analyzer issues, errors first, every one (at most MAX_ANNOTATIONS_PER_BUILD, 2,000).
 * 2,000 of the longest (a 1,000-character file, a 4,000-character message; 3 bytes a character
 * when not ASCII) pass what a libSQL server answers at once (10 MB): then they are read in smaller
 * requests, each after the last issue read.
 */
export async function listAnnotations(db: Executor, buildId: string) {
  return (
    await readInPieces(MAX_ANNOTATIONS_PER_BUILD, (count, last: Row | undefined) =>
      all(
        db,
        `SELECT *, ${SEVERITY_RANK} AS rank FROM build_annotations WHERE build_id = +? ${last ? `AND (${SEVERITY_RANK} > ? OR (${SEVERITY_RANK} = +? AND seq > ?))` : ""}
         ORDER BY rank, seq LIMIT +?`,
        [buildId, ...(last ? [num(last, "rank"), num(last, "rank"), num(last, "seq")] : []), count],
      ),
    )
  ).map((r) => ({
    severity: str(r, "severity") as "error" | "warning" | "notice",
    file: str(r, "file"),
    line: num(r, "line"),
    column: numOrNull(r, "col"),
    code: str(r, "code"),
    message: str(r, "message"),
  }));
}

/** Failures first: failed and errored, then skipped, then passed; within each, report order. */
const RANK = "(CASE r.status WHEN 'failed' THEN 0 WHEN 'error' THEN 0 WHEN 'skipped' THEN 1 ELSE 2 END)";

export interface CaseQuery {
  buildId: string;
  statuses: Status[];
  q: string | undefined;
  limit: number;
  /** "<rank>.<seq>" of the last case of the previous page. */
  cursor: string | undefined;
}

/** A page of a build's cases, failures first, with each case's recent results in its lane. */
export async function listCases(
  db: Executor,
  build: Build,
  query: CaseQuery,
): Promise<{ cases: z.output<typeof TestCaseResource>[]; next_cursor: string | null }> {
  const where = ["r.build_id = +?"];
  const args: (string | number)[] = [build.id];
  if (query.statuses.length) where.push(`r.status IN (${query.statuses.map(() => "?").join(", ")})`), args.push(...query.statuses);
  if (query.q) where.push("(lower(t.name) LIKE ? ESCAPE '\\' OR lower(t.suite) LIKE ? ESCAPE '\\')"), args.push(likePattern(query.q), likePattern(query.q));
  const cursor = /^(\d)\.(\d{1,10})$/.exec(query.cursor ?? "");
  const start = cursor ? { rank: Number(cursor[1]), seq: Number(cursor[2]) } : null;
  // A case may carry 4,000 + 16,000 + 8,000 characters (message, stack, output; 3 bytes each when
  // not ASCII), so a page of 200 can pass what a libSQL server answers at once (10 MB): then it is
  // read in smaller requests, each after the last case read, the same cases as in one.
  const rows = await readInPieces(query.limit + 1, (count, last: Row | undefined) => {
    const after = last ? { rank: num(last, "rank"), seq: num(last, "seq") } : start;
    return all(
      db,
      `SELECT r.*, t.test_key, t.suite, t.name, ${RANK} AS rank FROM test_results r JOIN tests t ON t.id = r.test_id
       WHERE ${[...where, ...(after ? [`(${RANK} > ? OR (${RANK} = +? AND r.seq > ?))`] : [])].join(" AND ")} ORDER BY rank, r.seq LIMIT +?`,
      [...args, ...(after ? [after.rank, after.rank, after.seq] : []), count],
    );
  });
  const page = rows.slice(0, query.limit);
  const cases = [];
  for (const r of page) {
    const status = str(r, "status") as Status;
    // The strip needs 10 results; a failure looks further back for where its run of failures began.
    const recent = await all(
      db,
      "SELECT build_id, build_number, status FROM test_results WHERE test_id = +? AND lane = +? AND build_number <= ? ORDER BY build_number DESC LIMIT +?",
      [num(r, "test_id"), str(r, "lane"), build.build_number, FAILED.has(status) ? 50 : 10],
    );
    const dots = recent.map((d) => ({ build_id: str(d, "build_id"), build_number: num(d, "build_number"), status: str(d, "status") as Status }));
    let since: { build_id: string; build_number: number } | null = null;
    let isNew = false;
    if (FAILED.has(status)) {
      since = { build_id: build.id, build_number: build.build_number };
      const earlier = dots.filter((d) => d.build_number < build.build_number);
      isNew = earlier.length === 0 || !FAILED.has(earlier[0]!.status);
      for (const d of earlier) {
        if (!FAILED.has(d.status)) break;
        since = { build_id: d.build_id, build_number: d.build_number };
      }
    }
    cases.push({
      id: String(num(r, "seq")),
      test_key: str(r, "test_key"),
      suite: str(r, "suite"),
      name: str(r, "name"),
      status,
      flaky: num(r, "flaky") === 1,
      duration_ms: numOrNull(r, "duration_ms"),
      message: strOrNull(r, "message"),
      stack: strOrNull(r, "stack"),
      output: strOrNull(r, "output"),
      file: strOrNull(r, "file"),
      line: numOrNull(r, "line"),
      last_results: dots.slice(0, 10),
      failing_since: since,
      new_failure: isNew,
    });
  }
  const last = page.at(-1);
  return { cases, next_cursor: rows.length > query.limit && last ? `${num(last, "rank")}.${num(last, "seq")}` : null };
}

function toTest(row: Row): z.output<typeof TestResource> {
  const runs = num(row, "runs");
  return {
    test_key: str(row, "test_key"),
    suite: str(row, "suite"),
    name: str(row, "name"),
    runs,
    failures: num(row, "failures"),
    failure_rate: runs > 0 ? Math.round((num(row, "failures") / runs) * 10000) / 10000 : 0,
    flaky_runs: num(row, "flaky_runs"),
    last_flaky_at: numOrNull(row, "last_flaky_at"),
    last_flaky_build_id: strOrNull(row, "last_flaky_build_id"),
    first_seen_at: num(row, "first_seen_at"),
    last_seen_at: num(row, "last_seen_at"),
  };
}

export async function findTest(db: Executor, pipelineId: string, testKey: string): Promise<{ id: number; test: z.output<typeof TestResource> } | null> {
  const row = await one(db, "SELECT * FROM tests WHERE pipeline_id = ? AND test_key = ?", [pipelineId, testKey]);
  return row ? { id: num(row, "id"), test: toTest(row) } : null;
}

/** One test's results in one lane, newest first, before build number `before` when given. */
export async function testHistory(
  db: Executor,
  testId: number,
  lane: string,
  o: { limit: number; before: number | undefined },
): Promise<{ results: z.output<typeof HistoryEntry>[]; next_before: number | null }> {
  const rows = await all(
    db,
    `SELECT r.build_id, r.build_number, r.status, r.flaky, r.duration_ms, r.message, b.commit_sha, b.created_at
     FROM test_results r JOIN builds b ON b.id = r.build_id
     WHERE r.test_id = +? AND r.lane = +? AND r.build_number < ? ORDER BY r.build_number DESC LIMIT +?`,
    [testId, lane, o.before ?? Number.MAX_SAFE_INTEGER, o.limit + 1],
  );
  const page = rows.slice(0, o.limit);
  return {
    results: page.map((r) => ({
      build_id: str(r, "build_id"),
      build_number: num(r, "build_number"),
      commit_sha: str(r, "commit_sha"),
      status: str(r, "status") as Status,
      flaky: num(r, "flaky") === 1,
      duration_ms: numOrNull(r, "duration_ms"),
      message: strOrNull(r, "message"),
      created_at: num(r, "created_at"),
    })),
    next_before: rows.length > o.limit ? num(page.at(-1)!, "build_number") : null,
  };
}

/** Tests that were flaky, most recently flaky first; "<last_flaky_at>.<id>" pages on. */
export async function flakyTests(
  db: Executor,
  pipelineId: string,
  o: { limit: number; cursor?: string | undefined },
): Promise<{ tests: z.output<typeof TestResource>[]; next_cursor: string | null }> {
  const after = /^(\d{1,12})\.(\d{1,18})$/.exec(o.cursor ?? "");
  const rows = await all(
    db,
    `SELECT * FROM tests WHERE pipeline_id = +? AND last_flaky_at IS NOT NULL ${after ? "AND (last_flaky_at < ? OR (last_flaky_at = +? AND id < ?))" : ""}
     ORDER BY last_flaky_at DESC, id DESC LIMIT +?`,
    [pipelineId, ...(after ? [Number(after[1]), Number(after[1]), Number(after[2])] : []), o.limit + 1],
  );
  const page = rows.slice(0, o.limit);
  const last = page.at(-1);
  return { tests: page.map(toTest), next_cursor: rows.length > o.limit && last ? `${num(last, "last_flaky_at")}.${num(last, "id")}` : null };
}

/** The lane a build's coverage is compared with: a pull request's target branch, else the project's default branch. */
export function targetLane(build: Build, defaultBranch: string): string {
  return laneOf(build) === build.branch ? defaultBranch : build.branch;
}

export async function coverageOf(
  db: Executor,
  build: Build,
  defaultBranch: string,
  o: { limit: number; offset: number },
): Promise<z.output<typeof CoverageAnswer>> {
  const own = await one(db, "SELECT lines_found, lines_hit FROM build_test_summaries WHERE build_id = ? AND lines_found IS NOT NULL", [build.id]);
  if (!own) return { coverage: null, baseline: null, change: null, files: [], total_files: 0 };
  const coverage = { lines_found: num(own, "lines_found"), lines_hit: num(own, "lines_hit"), percent: percent(num(own, "lines_hit"), num(own, "lines_found")) };
  const lane = targetLane(build, defaultBranch);
  const base = await one(
    db,
    "SELECT build_id, build_number, lines_found, lines_hit FROM build_test_summaries WHERE pipeline_id = +? AND lane = +? AND build_number < ? AND lines_found IS NOT NULL ORDER BY build_number DESC LIMIT 1",
    [build.pipeline_id, lane, build.build_number],
  );
  const baseline = base
    ? { build_id: str(base, "build_id"), build_number: num(base, "build_number"), lane, percent: percent(num(base, "lines_hit"), num(base, "lines_found")) }
    : null;
  const ratio = "(f.lines_hit * 1.0 / MAX(f.lines_found, 1))";
  const baseRatio = "(b.lines_hit * 1.0 / MAX(b.lines_found, 1))";
  const rows = await all(
    db,
    `SELECT f.path, f.lines_found, f.lines_hit, b.lines_found AS base_found, b.lines_hit AS base_hit
     FROM coverage_files f LEFT JOIN coverage_files b ON b.build_id = +? AND b.path = f.path
     WHERE f.build_id = +?
     ORDER BY CASE WHEN b.path IS NULL THEN 1 ELSE 0 END, (${ratio} - COALESCE(${baseRatio}, 0)), (f.lines_found - f.lines_hit) DESC, f.path
     LIMIT +? OFFSET +?`,
    [baseline?.build_id ?? "", build.id, o.limit, o.offset],
  );
  const total = await one(db, "SELECT COUNT(*) AS n FROM coverage_files WHERE build_id = ?", [build.id]);
  return {
    coverage,
    baseline,
    change: baseline ? Math.round((coverage.percent - baseline.percent) * 100) / 100 : null,
    files: rows.map((r) => {
      const p = percent(num(r, "lines_hit"), num(r, "lines_found"));
      const bp = r.base_found === null ? null : percent(num(r, "base_hit"), num(r, "base_found"));
      return {
        path: str(r, "path"),
        lines_found: num(r, "lines_found"),
        lines_hit: num(r, "lines_hit"),
        percent: p,
        baseline_percent: bp,
        change: bp === null ? null : Math.round((p - bp) * 100) / 100,
      };
    }),
    total_files: Number(total?.n ?? 0),
  };
}

/** The last builds of a pipeline with what their charts need, newest first. */
export async function pipelineTrends(
  db: Executor,
  pipelineId: string,
  o: { limit: number; branch?: string | undefined },
): Promise<z.output<typeof TrendPoint>[]> {
  const rows = await all(
    db,
    `SELECT b.id, b.build_number, b.branch, b.status, b.queued_at, b.started_at, b.finished_at, s.build_id AS has_summary, s.total, s.passed, s.failed, s.errored, s.skipped, s.flaky, s.duration_ms, s.lines_found, s.lines_hit, s.annotations
     FROM builds b LEFT JOIN build_test_summaries s ON s.build_id = b.id
     WHERE b.pipeline_id = +? ${o.branch ? "AND b.branch = +?" : ""} ORDER BY b.build_number DESC LIMIT +?`,
    [pipelineId, ...(o.branch ? [o.branch] : []), o.limit],
  );
  const ids = rows.map((r) => str(r, "id"));
  const artifacts = new Map<string, { path: string; size: number }[]>();
  if (ids.length) {
    for (const a of await all(db, `SELECT build_id, path, size FROM artifacts WHERE build_id IN (${ids.map(() => "?").join(", ")}) ORDER BY path`, ids)) {
      const list = artifacts.get(str(a, "build_id")) ?? [];
      list.push({ path: str(a, "path"), size: num(a, "size") });
      artifacts.set(str(a, "build_id"), list);
    }
  }
  return rows.map((r) => {
    const started = numOrNull(r, "started_at");
    const finished = numOrNull(r, "finished_at");
    return {
      build_id: str(r, "id"),
      build_number: num(r, "build_number"),
      branch: str(r, "branch"),
      status: str(r, "status"),
      queued_at: num(r, "queued_at"),
      queue_ms: started === null ? null : (started - num(r, "queued_at")) * 1000,
      duration_ms: started === null || finished === null ? null : (finished - started) * 1000,
      tests: r.has_summary === null ? null : toSummary(r),
      artifacts: artifacts.get(str(r, "id")) ?? [],
    };
  });
}
