// Test results end to end (docs/test-results.md): a real `roost serve`, a real `roost runner`
// building a real git repository with the `flutter` stand-in (scripts/flutter-stand-in) in its
// test-report mode, and the host-API stand-in as GitHub. The pipeline runs
// `flutter test --file-reporter json:… --coverage` with FLUTTER_STAND_IN_TESTS=flaky: the first
// build fails one test, the runner still sends the reports, the API shows them, GitHub gets a
// check run with an annotation on the failed test's line, and a re-run that passes marks the test
// flaky.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { http } from "../helpers/daemon.ts";
import { commitRepository, startGithubProject, type GithubProject } from "../helpers/ci-daemon.ts";
import { pollUntil } from "../helpers/poll.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";

const work = mkdtempSync(join(tmpdir(), "roost-test-results-e2e-"));
const repo = join(work, "app");
let ci: GithubProject;
let host: HostApiStandIn;
let commit = "";

const waitFor = pollUntil;
const finished = (buildId: string) => ci.waitForBuild(buildId);

beforeAll(async () => {
  commit = await commitRepository(repo, { "lib/main.dart": "void main() {}\n", "test/widget_test.dart": "// tests\n" });
  ci = await startGithubProject({
    daemon: { dataDir: join(work, "data"), cleanup: false, env: { ROOST_RUNNER_HEARTBEAT_SECONDS: "1", ROOST_RUNNER_LEASE_SECONDS: "4" } },
    repository: { id: 77, full_name: "acme/app", clone_url: repo },
    runner: { name: "linux-tests", home: work },
  });
  ({ host } = ci);
}, 60_000);

afterAll(async () => {
  await ci?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("a pipeline with failing, skipped and flaky tests", () => {
  test("its reports are sent whether the steps passed or failed, shown by the API and on GitHub, and a passing re-run marks the test flaky", async () => {
    const pipelineId = await ci.createPipeline({
      name: "checks",
      execution_config: {
        env: [{ key: "FLUTTER_STAND_IN_TESTS", value: "flaky" }],
        commands: { pre_build: ["flutter test --file-reporter json:build/test-results/flutter.json --coverage"] },
      },
    });
    const first = await finished(await ci.queueBuild(pipelineId, commit));
    expect(first.status).toBe("failed");

    const tests = (await http(ci.url, "GET", `/v1/builds/${first.id}/tests`, { token: ci.owner })).body;
    expect(tests.summary).toMatchObject({ total: 3, passed: 1, failed: 1, skipped: 1, coverage_percent: 75, text: "1 passed, 1 failed, 1 skipped" });
    expect(tests.reports.map((r: { path: string; format: string; status: string }) => `${r.path} ${r.format} ${r.status}`)).toEqual([
      "build/test-results/flutter.json dart_json read",
      "coverage/lcov.info lcov read",
    ]);
    const cases = (await http(ci.url, "GET", `/v1/builds/${first.id}/tests/cases?status=failed`, { token: ci.owner })).body.cases;
    expect(cases).toMatchObject([
      {
        suite: "test/widget_test.dart",
        name: "stand-in: counter increments",
        file: "test/widget_test.dart",
        line: 14,
        message: "Expected: <1>\n  Actual: <0>\n",
        output: "tapping the + button\n",
        new_failure: true,
      },
    ]);
    // The log says what was read, in the build where people look.
    const log = String((await http(ci.url, "GET", `/v1/builds/${first.id}/logs`, { token: ci.owner, headers: { accept: "text/plain" } })).body);
    expect(log).toContain("[roost] test report build/test-results/flutter.json (dart_json): 3 test results read");
    expect(log).toContain("[roost] test report coverage/lcov.info (lcov): coverage read");

    // GitHub: a failed check run with an annotation on the test's line, and the status's description.
    const run = await waitFor(
      "the check run",
      async () => host.github.checkRuns.find((r) => r.head_sha === commit && r.conclusion === "failure"),
      (r) => r !== undefined,
    );
    expect(run).toMatchObject({ name: "roost/checks", output: { title: "1 of 3 tests failed" } });
    expect(run!.annotations).toMatchObject([
      { path: "test/widget_test.dart", start_line: 14, annotation_level: "failure", title: "test/widget_test.dart › stand-in: counter increments" },
    ]);
    await waitFor(
      "the commit status",
      async () => host.requests.filter((r) => r.path === `/repos/acme/app/statuses/${commit}`).map((r) => (r.body as { description: string }).description),
      (d) => d.includes(`Build #${first.build_number} failed: 1 of 3 tests failed`),
    );

    const rerun = (await http(ci.url, "POST", `/v1/builds/${first.id}/rerun`, { token: ci.owner })).body.build;
    expect((await finished(rerun.id)).status).toBe("succeeded");
    const flaky = (await http(ci.url, "GET", `/v1/pipelines/${pipelineId}/flaky-tests`, { token: ci.owner })).body.tests;
    expect(flaky).toMatchObject([
      { name: "stand-in: counter increments", runs: 2, failures: 1, failure_rate: 0.5, flaky_runs: 1, last_flaky_build_id: rerun.id },
    ]);
    const listed = (await http(ci.url, "GET", `/v1/pipelines/${pipelineId}/builds`, { token: ci.owner })).body.builds;
    expect(listed.map((b: { test_summary: { text: string } }) => b.test_summary.text)).toEqual(["2 passed, 1 skipped", "1 passed, 1 failed, 1 skipped"]);
  }, 90_000);

  test("a step that prints flutter test --machine to its log has its results read, with no file and no test_reports pattern", async () => {
    const pipelineId = await ci.createPipeline({
      name: "printed",
      execution_config: {
        env: [{ key: "FLUTTER_STAND_IN_TESTS", value: "fail" }],
        commands: { pre_build: ["echo before the tests", "flutter test --machine"] },
      },
    });
    const build = await finished(await ci.queueBuild(pipelineId, commit));
    expect(build.status).toBe("failed");
    const tests = (await http(ci.url, "GET", `/v1/builds/${build.id}/tests`, { token: ci.owner })).body;
    expect(tests.reports.map((r: { path: string; format: string; status: string }) => `${r.path} ${r.format} ${r.status}`)).toEqual([
      "(printed by flutter test --machine)/pre_build-1.json dart_json read",
    ]);
    expect(tests.summary).toMatchObject({ total: 3, passed: 1, failed: 1, skipped: 1 });
    const failed = (await http(ci.url, "GET", `/v1/builds/${build.id}/tests/cases?status=failed`, { token: ci.owner })).body.cases;
    expect(failed).toMatchObject([{ name: "stand-in: counter increments", file: "test/widget_test.dart", line: 14 }]);
    // The events stay in the log too: the step printed them there.
    const log = String((await http(ci.url, "GET", `/v1/builds/${build.id}/logs`, { token: ci.owner, headers: { accept: "text/plain" } })).body);
    expect(log).toContain('"type":"testDone"');
    expect(log).toContain("[roost] test report (printed by flutter test --machine)/pre_build-1.json (dart_json): 3 test results read");
  }, 90_000);
});
