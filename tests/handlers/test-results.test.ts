// Test results through the API (docs/test-results.md): a runner uploads reports after a build's
// steps (PUT …/test-reports), and people read a build's summary and cases (failures first,
// filtered, searched, paged), one test's history on a branch, the pipeline's flaky tests, coverage
// against the target branch, the build list's one-line summary and the pipeline's trends.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { userWithRole, type TestApp } from "../helpers/app.ts";
import { SHA_A, SHA_B, createPipeline, startCiFixture, type CiFixture } from "../helpers/ci.ts";

const FIXTURES = join(import.meta.dir, "../fixtures/test-results");
const fixture = (name: string) => readFileSync(join(FIXTURES, name), "utf8");
const WORKSPACE = "/home/ci/roost/jobs/5d1c0e7a";
const SHA_C = "c".repeat(40);

let t: TestApp;
let owner: string;
let projectId: string;
let ci: CiFixture;
let runner: { id: string; token: string };

beforeAll(async () => {
  ci = await startCiFixture();
  ({ t, owner, projectId } = ci);
  const created = await t.call("POST", "/v1/runners", { token: owner, body: { name: "tests-runner" } });
  runner = { id: created.body.runner.id, token: created.body.token };
  await t.call("POST", `/v1/runners/${runner.id}/connect`, { token: runner.token, body: { capabilities: { os: "linux", arch: "x64" }, version: "test" } });
});
afterAll(() => ci.stop());

type Upload = { status: number; body: any };

/** Runs one build of `pipelineId` through the protocol: claimed, its reports uploaded, finished. */
async function build(
  pipelineId: string,
  reports: Record<string, string>,
  o: { commit?: string; branch?: string; rerunOf?: string; status?: "succeeded" | "failed" } = {},
) {
  const made = o.rerunOf
    ? await t.call("POST", `/v1/builds/${o.rerunOf}/rerun`, { token: owner })
    : await t.call("POST", `/v1/projects/${projectId}/builds`, {
        token: owner,
        body: { pipeline_id: pipelineId, commit_sha: o.commit ?? SHA_A, ...(o.branch ? { branch: o.branch } : {}) },
      });
  if (made.status !== 201) throw new Error(made.text);
  const claimed = await t.call("POST", `/v1/runners/${runner.id}/jobs/claim`, {
    token: runner.token,
    body: { claim_id: crypto.randomUUID(), wait_seconds: 0 },
  });
  const job = claimed.body.job;
  expect(job.build.id).toBe(made.body.build.id);
  const uploads: Record<string, Upload> = {};
  for (const [path, text] of Object.entries(reports)) uploads[path] = await upload(job.job_id, path, text);
  await t.call("POST", `/v1/runners/${runner.id}/jobs/${job.job_id}/finish`, {
    token: runner.token,
    body: { status: o.status ?? "failed", exit_code: o.status === "succeeded" ? 0 : 1, line_count: 0 },
  });
  return { id: made.body.build.id as string, number: made.body.build.build_number as number, job: job.job_id as string, uploads };
}

function upload(jobId: string, path: string, text: string, headers: Record<string, string> = {}) {
  return t.call("PUT", `/v1/runners/${runner.id}/jobs/${jobId}/test-reports?path=${encodeURIComponent(path)}`, {
    token: runner.token,
    raw: text,
    contentType: "application/octet-stream",
    headers: { "x-roost-workspace": WORKSPACE, ...headers },
  });
}

const flutter = fixture("flutter-machine.jsonl");
const gradle = fixture("gradle-TEST-com.example.counter.CounterRepositoryTest.xml");
const lcov = fixture("lcov.info");
const analyze = fixture("dart-analyze-machine.txt");
/** The flutter run with "Counter value should be decremented" passing instead. */
const flutterFixed = flutter
  .split("\n")
  .filter((l) => !l.includes('"testID":10,"error"'))
  .join("\n")
  .replace('{"testID":10,"result":"failure"', '{"testID":10,"result":"success"');

describe("uploading reports", () => {
  test("each report is read and answered with what was kept; the build's summary counts every test", async () => {
    const pipeline = await createPipeline(t, owner, projectId);
    const b = await build(pipeline.id, {
      "build/test-results/flutter.json": flutter,
      "build/app/test-results/testDebugUnitTest/TEST-com.example.counter.CounterRepositoryTest.xml": gradle,
      "coverage/lcov.info": lcov,
      "build/analyze.txt": analyze,
    });
    expect(b.uploads["build/test-results/flutter.json"]).toMatchObject({
      status: 201,
      body: { report: { path: "build/test-results/flutter.json", format: "dart_json", status: "read", problems: [], cases: 8 } },
    });
    expect(b.uploads["coverage/lcov.info"]!.body.report).toMatchObject({ format: "lcov", status: "read", cases: 0 });
    const tests = await t.call("GET", `/v1/builds/${b.id}/tests`, { token: owner });
    expect(tests.status).toBe(200);
    expect(tests.body.summary).toEqual({
      total: 12,
      passed: 6,
      failed: 2,
      errored: 2,
      skipped: 2,
      flaky: 0,
      duration_ms: 3901,
      coverage_percent: 61.9,
      annotations: 4,
      text: "6 passed, 4 failed, 2 skipped",
    });
    expect(tests.body.reports.map((r: { path: string; status: string }) => `${r.path} ${r.status}`)).toEqual([
      "build/analyze.txt read",
      "build/app/test-results/testDebugUnitTest/TEST-com.example.counter.CounterRepositoryTest.xml read",
      "build/test-results/flutter.json read",
      "coverage/lcov.info read",
    ]);
    // A file and line link to the source host at the build's commit.
    expect(tests.body.source_file_url).toBe(`https://github.example.test/acme/app/blob/${SHA_A}/{path}#L{line}`);
    // Errors first, then warnings, then notices; paths relative to the checkout.
    expect(tests.body.annotations.map((a: { severity: string; file: string; line: number }) => `${a.severity} ${a.file}:${a.line}`)).toEqual([
      "error test/broken_test.dart:4",
      "warning lib/counter.dart:2",
      "notice lib/main.dart:12",
      "notice lib/a|b.dart:3",
    ]);
    const listed = await t.call("GET", `/v1/pipelines/${pipeline.id}/builds`, { token: owner });
    expect(listed.body.builds[0].test_summary.text).toBe("6 passed, 4 failed, 2 skipped");
  });

  test("a malformed, cut or unknown report is kept as far as it goes and says why; nothing else fails", async () => {
    const pipeline = await createPipeline(t, owner, projectId);
    const b = await build(pipeline.id, {
      "build/test-results/cut.json": fixture("flutter-machine-cut.jsonl"),
      "build/test-results/screenshot.xml": "\u0089PNG\r\n\u001a\n" + "\u0000".repeat(200),
      "build/test-results/broken.xml": '<testsuite><testcase name="ok" classname="c"/><testcase name="bad',
      "build/test-results/flutter.json": flutter,
    });
    expect(b.uploads["build/test-results/cut.json"]!.body.report).toMatchObject({
      status: "partial",
      cases: 8,
      problems: [
        "The report ends before the test run's done event: the run was cut short. 1 test that had started is reported as errors.",
        "1 line was not a JSON event and was skipped.",
      ],
    });
    expect(b.uploads["build/test-results/screenshot.xml"]!.body.report).toMatchObject({
      status: "rejected",
      format: null,
      cases: 0,
      problems: [
        "The format of build/test-results/screenshot.xml was not recognised (expected the Dart JSON reporter's output, JUnit XML, lcov or dart analyze --format=machine); it was not read.",
      ],
    });
    expect(b.uploads["build/test-results/broken.xml"]!.body.report).toMatchObject({
      status: "partial",
      cases: 1,
      problems: ["The XML ends inside <testsuite>: the file was cut short; the test cases before that point were read."],
    });
    expect(b.uploads["build/test-results/flutter.json"]!.body.report).toMatchObject({ status: "read", cases: 8 });
    const summary = (await t.call("GET", `/v1/builds/${b.id}/tests`, { token: owner })).body.summary;
    expect(summary.total).toBe(17);
  });

  test("a second upload of the same path is refused; a report over the byte limit says it was cut", async () => {
    const pipeline = await createPipeline(t, owner, projectId);
    await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    const job = (await t.call("POST", `/v1/runners/${runner.id}/jobs/claim`, { token: runner.token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } }))
      .body.job;
    expect((await upload(job.job_id, "build/test-results/a.json", flutter)).status).toBe(201);
    const again = await upload(job.job_id, "build/test-results/a.json", flutter);
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ code: "test_report_exists", message: "This build already has the test report build/test-results/a.json." });
    const cut = await upload(job.job_id, "build/test-results/b.json", flutter.slice(0, 3000), { "x-roost-report-bytes": "50000000" });
    expect(cut.body.report.problems[0]).toBe("The file is 50000000 bytes; only its first 3000 bytes were uploaded and read.");
    expect((await upload(job.job_id, "../outside.json", flutter)).status).toBe(400);
    // A user credential is not a runner's.
    expect(
      (
        await t.call("PUT", `/v1/runners/${runner.id}/jobs/${job.job_id}/test-reports?path=x.json`, {
          token: owner,
          raw: flutter,
          contentType: "application/octet-stream",
        })
      ).status,
    ).toBe(401);
    await t.call("POST", `/v1/runners/${runner.id}/jobs/${job.job_id}/finish`, {
      token: runner.token,
      body: { status: "succeeded", exit_code: 0, line_count: 0 },
    });
    // The job is over: the report comes too late.
    expect((await upload(job.job_id, "build/test-results/c.json", flutter)).body.code).toBe("job_finished");
  });
});

describe("a build's cases", () => {
  let pipelineId: string;
  let first: Awaited<ReturnType<typeof build>>;
  let second: Awaited<ReturnType<typeof build>>;
  beforeAll(async () => {
    pipelineId = (await createPipeline(t, owner, projectId)).id;
    first = await build(pipelineId, { "build/test-results/flutter.json": flutterFixed }, { commit: SHA_A, status: "succeeded" });
    second = await build(pipelineId, { "build/test-results/flutter.json": flutter, "build/app/test-results/t/TEST-x.xml": gradle }, { commit: SHA_B });
  });

  test("failures come first, each with its message, stack, file and line, its last results and whether it is new", async () => {
    const res = await t.call("GET", `/v1/builds/${second.id}/tests/cases`, { token: owner });
    expect(res.status).toBe(200);
    const statuses = res.body.cases.map((c: { status: string }) => c.status);
    expect(statuses).toEqual(["error", "failed", "error", "failed", "skipped", "skipped", "passed", "passed", "passed", "passed", "passed", "passed"]);
    const decremented = res.body.cases.find((c: { name: string }) => c.name === "Counter value should be decremented");
    expect(decremented).toMatchObject({
      suite: "test/counter_test.dart",
      status: "failed",
      flaky: false,
      message: "Expected: <-1>\n  Actual: <1>\n",
      file: "test/counter_test.dart",
      line: 18,
      failing_since: { build_id: second.id, build_number: second.number },
      new_failure: true,
      last_results: [
        { build_id: second.id, build_number: second.number, status: "failed" },
        { build_id: first.id, build_number: first.number, status: "passed" },
      ],
    });
    expect(decremented.test_key).toMatch(/^[0-9a-f]{16}$/);
    // The widget test that failed in both builds has been failing since the first.
    const title = res.body.cases.find((c: { name: string }) => c.name === "Counter shows the title");
    expect(title).toMatchObject({ new_failure: false, failing_since: { build_id: first.id, build_number: first.number } });
  });

  test("filtered by status, searched by name, paged with a cursor that never repeats or skips a case", async () => {
    const skipped = await t.call("GET", `/v1/builds/${second.id}/tests/cases?status=skipped`, { token: owner });
    expect(skipped.body.cases.map((c: { name: string }) => c.name)).toEqual(["Counter value should reset", "clearsOnSignOut"]);
    const failing = await t.call("GET", `/v1/builds/${second.id}/tests/cases?status=failed,error&q=COUNTER%20value`, { token: owner });
    expect(failing.body.cases.map((c: { name: string }) => c.name)).toEqual(["Counter value should be decremented"]);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await t.call("GET", `/v1/builds/${second.id}/tests/cases?limit=5${cursor ? `&cursor=${cursor}` : ""}`, { token: owner });
      seen.push(...page.body.cases.map((c: { id: string }) => c.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toHaveLength(12);
    expect(new Set(seen).size).toBe(12);
    const bad = await t.call("GET", `/v1/builds/${second.id}/tests/cases?status=broken`, { token: owner });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("invalid_request");
  });

  test("one test's history on the branch, newest first, paged by build number", async () => {
    const key = (await t.call("GET", `/v1/builds/${second.id}/tests/cases?q=decremented`, { token: owner })).body.cases[0].test_key;
    const res = await t.call("GET", `/v1/pipelines/${pipelineId}/tests/${key}?limit=1`, { token: owner });
    expect(res.status).toBe(200);
    expect(res.body.test).toMatchObject({
      test_key: key,
      suite: "test/counter_test.dart",
      name: "Counter value should be decremented",
      runs: 2,
      failures: 1,
      failure_rate: 0.5,
      flaky_runs: 0,
    });
    expect(res.body.lane).toBe("main");
    expect(res.body.results.map((r: { build_number: number; status: string; commit_sha: string }) => [r.build_number, r.status, r.commit_sha])).toEqual([
      [second.number, "failed", SHA_B],
    ]);
    const next = await t.call("GET", `/v1/pipelines/${pipelineId}/tests/${key}?limit=1&before=${res.body.next_before}`, { token: owner });
    expect(next.body.results.map((r: { build_number: number; status: string }) => [r.build_number, r.status])).toEqual([[first.number, "passed"]]);
    expect(next.body.next_before).toBeNull();
    expect((await t.call("GET", `/v1/pipelines/${pipelineId}/tests/${key}?branch=release%2F1.0`, { token: owner })).body.results).toEqual([]);
    const missing = await t.call("GET", `/v1/pipelines/${pipelineId}/tests/0000000000000000`, { token: owner });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ code: "not_found", message: "No test with that key in this pipeline." });
  });

  test("people outside the project see none of it", async () => {
    const outsider = await userWithRole(t, owner, "developer");
    for (const path of [
      `/v1/builds/${second.id}/tests`,
      `/v1/builds/${second.id}/tests/cases`,
      `/v1/builds/${second.id}/coverage`,
      `/v1/pipelines/${pipelineId}/flaky-tests`,
      `/v1/pipelines/${pipelineId}/trends`,
    ]) {
      const res = await t.call("GET", path, { token: outsider.token });
      expect([path, res.status]).toEqual([path, 404]);
    }
  });
});

describe("flaky tests", () => {
  test("a test that failed and then passed on the same commit (a re-run) is flaky, listed with its failure rate", async () => {
    const pipelineId = (await createPipeline(t, owner, projectId)).id;
    const failed = await build(pipelineId, { "build/test-results/flutter.json": flutter }, { commit: SHA_C });
    const rerun = await build(pipelineId, { "build/test-results/flutter.json": flutterFixed }, { rerunOf: failed.id, status: "succeeded" });
    const cases = (await t.call("GET", `/v1/builds/${rerun.id}/tests/cases?q=decremented`, { token: owner })).body.cases;
    expect(cases.map((c: { status: string; flaky: boolean }) => [c.status, c.flaky])).toEqual([["passed", true]]);
    expect((await t.call("GET", `/v1/builds/${rerun.id}/tests`, { token: owner })).body.summary.flaky).toBe(1);
    const flaky = await t.call("GET", `/v1/pipelines/${pipelineId}/flaky-tests`, { token: owner });
    expect(
      flaky.body.tests.map((x: { name: string; runs: number; failures: number; failure_rate: number; flaky_runs: number; last_flaky_build_id: string }) => [
        x.name,
        x.runs,
        x.failures,
        x.failure_rate,
        x.flaky_runs,
        x.last_flaky_build_id,
      ]),
    ).toEqual([["Counter value should be decremented", 2, 1, 0.5, 1, rerun.id]]);
    expect(flaky.body.next_cursor).toBeNull();
    // The widget test failed both times: consistently broken, not flaky.
    expect(flaky.body.tests.some((x: { name: string }) => x.name === "Counter shows the title")).toBe(false);
  });
});

describe("coverage", () => {
  test("a feature branch's coverage against the default branch, the files that lost most first", async () => {
    const pipelineId = (await createPipeline(t, owner, projectId)).id;
    const main = await build(pipelineId, { "coverage/lcov.info": lcov }, { status: "succeeded" });
    const lostCounter = lcov
      .replace("DA:3,1\nDA:4,3\nDA:6,1\nDA:7,1", "DA:3,1\nDA:4,0\nDA:6,0\nDA:7,0")
      .replace("SF:lib/settings/settings_page.dart", "SF:lib/settings/new_page.dart");
    const feature = await build(pipelineId, { "coverage/lcov.info": lostCounter }, { branch: "feature/settings", commit: SHA_B, status: "succeeded" });
    const res = await t.call("GET", `/v1/builds/${feature.id}/coverage`, { token: owner });
    expect(res.status).toBe(200);
    expect(res.body.coverage).toEqual({ lines_found: 21, lines_hit: 10, percent: 47.62 });
    expect(res.body.baseline).toEqual({ build_id: main.id, build_number: main.number, lane: "main", percent: 61.9 });
    expect(res.body.change).toBe(-14.28);
    expect(res.body.files).toEqual([
      { path: "lib/counter.dart", lines_found: 6, lines_hit: 1, percent: 16.67, baseline_percent: 66.67, change: -50 },
      { path: "lib/main.dart", lines_found: 11, lines_hit: 9, percent: 81.82, baseline_percent: 81.82, change: 0 },
      { path: "lib/settings/new_page.dart", lines_found: 4, lines_hit: 0, percent: 0, baseline_percent: null, change: null },
    ]);
    expect(res.body.total_files).toBe(3);
    const none = await t.call("GET", `/v1/builds/${main.id}/coverage`, { token: owner });
    expect(none.body.baseline).toBeNull();
    expect(none.body.coverage.percent).toBe(61.9);
  });
});

describe("trends", () => {
  test("the pipeline's last builds with duration, tests and artifact sizes, newest first", async () => {
    const pipelineId = (await createPipeline(t, owner, projectId)).id;
    const a = await build(pipelineId, { "build/test-results/flutter.json": flutterFixed }, { status: "succeeded" });
    const b = await build(pipelineId, {}, { status: "succeeded" });
    const res = await t.call("GET", `/v1/pipelines/${pipelineId}/trends?limit=10`, { token: owner });
    expect(res.status).toBe(200);
    expect(res.body.builds.map((p: { build_id: string; tests: { text: string } | null }) => [p.build_id, p.tests?.text ?? null])).toEqual([
      [b.id, null],
      [a.id, "5 passed, 2 failed, 1 skipped"],
    ]);
    expect(res.body.builds[0]).toMatchObject({ status: "succeeded", queue_ms: expect.any(Number), duration_ms: expect.any(Number), artifacts: [] });
  });
});
