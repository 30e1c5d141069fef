// Test results where the developer looks (docs/test-results.md "Where failures show"): the commit
// status's description ("Build #3 failed: 4 of 12 tests failed"), a GitHub check run per pipeline
// with an annotation on the file and line of each failed test and analyzer issue (against the
// host-API stand-in, which answers 403 without the App's checks permission as GitHub does), and
// notifications that name the failed tests and link to them.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { TestApp } from "../helpers/app.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, SHA_B, createPipeline, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import { reportCommitStatuses } from "../../lib/forges/commit-statuses.ts";
import { pruneCheckRunReports, reportCheckRuns } from "../../lib/test-results/check-runs.ts";
import { backoffSeconds, REPORT_ATTEMPTS_BEFORE_INCIDENT } from "../../lib/forges/commit-statuses.ts";
import { dispatchNotifications } from "../../lib/notifications/notifications.ts";
import { startSmtpServer } from "../support/smtp.ts";

const FIXTURES = join(import.meta.dir, "../fixtures/test-results");
const fixture = (name: string) => readFileSync(join(FIXTURES, name), "utf8");
const WORKSPACE = "/home/ci/roost/jobs/5d1c0e7a";
const BASE = "https://ci.example.test";

let t: TestApp;
let host: HostApiStandIn;
let owner: string;
let projectId: string;
let ci: CiFixture;
let runner: { id: string; token: string };
let receiver: ReturnType<typeof Bun.serve>;
let received: { path: string; body: any }[] = [];

const deps = () => ({ db: t.db, secrets: t.ctx.secrets, config: t.ctx.config, clock: t.clock, log: t.ctx.log, now: t.clock.now(), baseUrl: BASE });

beforeAll(async () => {
  ci = await startCiFixture();
  ({ t, host, owner, projectId } = ci);
  const created = await t.call("POST", "/v1/runners", { token: owner, body: { name: "feedback-runner" } });
  runner = { id: created.body.runner.id, token: created.body.token };
  await t.call("POST", `/v1/runners/${runner.id}/connect`, { token: runner.token, body: { capabilities: { os: "linux", arch: "x64" }, version: "test" } });
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      received.push({ path: new URL(request.url).pathname, body: await request.json() });
      return new Response("ok");
    },
  });
});
afterAll(async () => {
  receiver.stop(true);
  await ci.stop();
});

/** A build of `pipelineId` that sends `reports` and finishes `status`. */
async function build(pipelineId: string, reports: Record<string, string>, status: "succeeded" | "failed", commit = SHA_A) {
  const made = await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, commit_sha: commit } });
  const job = (await t.call("POST", `/v1/runners/${runner.id}/jobs/claim`, { token: runner.token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } }))
    .body.job;
  for (const [path, text] of Object.entries(reports)) {
    const res = await t.call("PUT", `/v1/runners/${runner.id}/jobs/${job.job_id}/test-reports?path=${encodeURIComponent(path)}`, {
      token: runner.token,
      raw: text,
      contentType: "application/octet-stream",
      headers: { "x-roost-workspace": WORKSPACE },
    });
    expect(res.status).toBe(201);
  }
  await t.call("POST", `/v1/runners/${runner.id}/jobs/${job.job_id}/finish`, {
    token: runner.token,
    body: {
      status,
      exit_code: status === "failed" ? 1 : 0,
      failure_reason: status === "failed" ? "step pre_build failed with exit code 1" : undefined,
      line_count: 0,
    },
  });
  return made.body.build as { id: string; build_number: number };
}

const REPORTS = {
  "build/test-results/flutter.json": fixture("flutter-machine.jsonl"),
  "build/app/test-results/t/TEST-x.xml": fixture("gradle-TEST-com.example.counter.CounterRepositoryTest.xml"),
  "build/analyze.txt": fixture("dart-analyze-machine.txt"),
};

describe("the commit status", () => {
  test("a finished build's description carries its tests: failed ones counted of all", async () => {
    const pipeline = await createPipeline(t, owner, projectId, { name: "Android" });
    const failed = await build(pipeline.id, REPORTS, "failed");
    await reportCommitStatuses(deps());
    const statuses = host.requests
      .filter((r) => r.method === "POST" && r.path === `/repos/acme/app/statuses/${SHA_A}`)
      .map((r) => r.body as { description: string; context: string });
    expect(statuses.at(-1)).toMatchObject({ context: "roost/Android", description: `Build #${failed.build_number} failed: 4 of 12 tests failed` });
    const passing = await build(
      pipeline.id,
      {
        "build/test-results/flutter.json": fixture("flutter-machine.jsonl")
          .split("\n")
          .filter((l) => !/"result":"(failure|error)"|"type":"error"/.test(l))
          .join("\n"),
      },
      "succeeded",
      SHA_B,
    );
    await reportCommitStatuses(deps());
    const last = host.requests.filter((r) => r.method === "POST" && r.path === `/repos/acme/app/statuses/${SHA_B}`).at(-1)!.body as { description: string };
    // The three tests whose events were removed never finished: errors, so still failing.
    expect(last.description).toBe(`Build #${passing.build_number} succeeded: 3 of 8 tests failed`);
  });
});

describe("GitHub check runs", () => {
  test("one check run per pipeline on the build's commit: the summary, and an annotation per failed test and analyzer issue", async () => {
    const pipeline = await createPipeline(t, owner, projectId, { name: "Checks" });
    const b = await build(pipeline.id, REPORTS, "failed");
    expect(await reportCheckRuns(deps())).toBeGreaterThanOrEqual(1);
    const run = host.github.checkRuns.find((r) => r.name === "roost/Checks")!;
    expect(run).toMatchObject({
      repository: "acme/app",
      head_sha: SHA_A,
      status: "completed",
      conclusion: "failure",
      details_url: `${BASE}/projects/${projectId}/builds/${b.id}?tab=tests`,
    });
    expect(run.output.title).toBe("4 of 12 tests failed");
    expect(run.output.summary).toContain("6 passed, 4 failed, 2 skipped.");
    expect(run.output.summary).toContain(
      "- test/counter\\_test.dart › Counter value should be decremented: Expected: <-1> (test/counter\\_test.dart:18)".replace("<-1>", "\\<-1\\>"),
    );
    expect(run.output.summary).toContain("4 analyzer issues.");
    expect(run.annotations.map((a) => `${a.annotation_level} ${a.path}:${a.start_line} ${a.title}`)).toEqual([
      "failure test/counter_test.dart:18 test/counter_test.dart › Counter value should be decremented",
      "failure test/widget_test.dart:31 test/widget_test.dart › Counter shows the title",
      "failure test/broken_test.dart:4 undefined_identifier",
      "warning lib/counter.dart:2 unused_import",
      "notice lib/main.dart:12 prefer_const_constructors",
      "notice lib/a|b.dart:3 avoid_print",
    ]);
    expect(run.annotations[0]).toMatchObject({
      message: "Expected: <-1>\n  Actual: <1>\n",
      raw_details: expect.stringContaining("test/counter_test.dart 22:7"),
    });
    // Sent once.
    const before = host.github.checkRuns.length;
    await reportCheckRuns(deps());
    expect(host.github.checkRuns.length).toBe(before);
  });

  test("more than 50 annotations go in batches of 50 (GitHub's limit per request)", async () => {
    const pipeline = await createPipeline(t, owner, projectId, { name: "Many" });
    const cases = Array.from(
      { length: 120 },
      (_, i) => `<testcase classname="C" name="t${i}" file="test/many_test.dart" line="${i + 1}"><failure message="boom ${i}"/></testcase>`,
    ).join("");
    await build(pipeline.id, { "build/test-results/many.xml": `<testsuite name="C">${cases}</testsuite>` }, "failed");
    await reportCheckRuns(deps());
    const run = host.github.checkRuns.find((r) => r.name === "roost/Many")!;
    expect(run.annotations).toHaveLength(120);
    expect(host.requests.filter((r) => r.method === "PATCH" && r.path === `/repos/acme/app/check-runs/${run.id}`)).toHaveLength(2);
  });

  test("without the App's checks permission GitHub answers 403: retried with backoff, then an incident says which permission to grant", async () => {
    const pipeline = await createPipeline(t, owner, projectId, { name: "NoPermission" });
    await build(pipeline.id, REPORTS, "failed");
    host.github.checksPermission = false;
    try {
      for (let i = 0; i < REPORT_ATTEMPTS_BEFORE_INCIDENT; i++) {
        await reportCheckRuns(deps());
        t.clock.advance(700);
      }
      const incidents = (await t.call("GET", "/v1/operator-incidents?status=open", { token: owner })).body.incidents;
      const incident = incidents.find((i: { reason: string }) => i.reason === "check_run_failed");
      expect(incident).toMatchObject({
        message: "Check runs for acme/app cannot be reported: 127.0.0.1:" + new URL(host.url).port + " answered HTTP 403 (the credentials lack access)",
      });
      expect(incident.repair_action).toContain('"Checks: Read and write"');
      // The build itself is untouched.
      expect(host.github.checkRuns.some((r) => r.name === "roost/NoPermission")).toBe(false);
    } finally {
      host.github.checksPermission = true;
    }
    t.clock.advance(700);
    await reportCheckRuns(deps());
    expect(host.github.checkRuns.some((r) => r.name === "roost/NoPermission")).toBe(true);
    const open = (await t.call("GET", "/v1/operator-incidents?status=open", { token: owner })).body.incidents;
    expect(open.some((i: { reason: string }) => i.reason === "check_run_failed")).toBe(false);
  });

  test("two daemons' passes at once send a build's check run once", async () => {
    const pipeline = await createPipeline(t, owner, projectId, { name: "TwoDaemons" });
    await build(pipeline.id, REPORTS, "failed");
    // Each pass claims what it sends (lib/test-results/check-runs.ts): the other finds it taken.
    const sent = await Promise.all([reportCheckRuns(deps()), reportCheckRuns(deps())]);
    expect(sent[0]! + sent[1]!).toBe(1);
    expect(host.github.checkRuns.filter((r) => r.name === "roost/TwoDaemons")).toHaveLength(1);
    await reportCheckRuns(deps());
    expect(host.github.checkRuns.filter((r) => r.name === "roost/TwoDaemons")).toHaveLength(1);
  });

  test("a send to a host that stops answering is stopped well within its claim: no other pass sends it meanwhile, and it is retried once", async () => {
    const pipeline = await createPipeline(t, owner, projectId, { name: "SlowHost" });
    const b = await build(pipeline.id, REPORTS, "failed");
    const creates = () =>
      host.requests.filter((r) => r.method === "POST" && r.path === "/repos/acme/app/check-runs" && (r.body as { name: string }).name === "roost/SlowHost");
    // The host-API stand-in holds the create unanswered; this pass stops its send after 3 s (SEND_TIMEOUT_MS is 20 s).
    host.github.holdCheckRuns = 1;
    const stuck = reportCheckRuns(deps(), 10, 3000);
    for (let waited = 0; creates().length === 0; waited += 20) {
      if (waited > 10_000) throw new Error("the check run never reached the host");
      await Bun.sleep(20);
    }
    // Another daemon's pass meanwhile: the row is claimed, so it sends nothing of it.
    await reportCheckRuns(deps());
    expect(creates()).toHaveLength(1);
    expect(await stuck).toBe(0);
    const row = await t.db.execute({ sql: "SELECT done, attempts, claimed_by, last_error FROM check_run_reports WHERE build_id = ?", args: [b.id] });
    expect({ ...row.rows[0] }).toEqual({
      done: 0,
      attempts: 1,
      claimed_by: null,
      last_error: `stopped before 127.0.0.1:${new URL(host.url).port} answered: the check run took longer than 3 s to send`,
    });
    // Due again after its backoff (jittered: its longest): sent once, and never again.
    t.clock.advance(backoffSeconds(1, () => 1));
    await reportCheckRuns(deps());
    await reportCheckRuns(deps());
    expect(creates()).toHaveLength(2);
    expect(host.github.checkRuns.filter((r) => r.name === "roost/SlowHost")).toHaveLength(1);
  });

  test("a pass starts no send for which too little of its claim is left: it gives the claim back, due at once", async () => {
    const pipeline = await createPipeline(t, owner, projectId, { name: "NoTimeLeft" });
    const b = await build(pipeline.id, REPORTS, "failed");
    // A send may take 240 s: with the claim's 300 s less a minute's margin, none may start.
    expect(await reportCheckRuns(deps(), 10, 240_000)).toBe(0);
    const row = await t.db.execute({ sql: "SELECT done, attempts, claimed_by, next_attempt_at FROM check_run_reports WHERE build_id = ?", args: [b.id] });
    expect({ ...row.rows[0] }).toEqual({ done: 0, attempts: 0, claimed_by: null, next_attempt_at: t.clock.now() });
    expect(host.github.checkRuns.some((r) => r.name === "roost/NoTimeLeft")).toBe(false);
    await reportCheckRuns(deps());
    expect(host.github.checkRuns.filter((r) => r.name === "roost/NoTimeLeft")).toHaveLength(1);
  });

  test("a build that finished more than a day before a pass is not reported late", async () => {
    const pipeline = await createPipeline(t, owner, projectId, { name: "DayLate" });
    await build(pipeline.id, REPORTS, "failed");
    // A pass a day and a second after the finish (the daemons were down meanwhile) forgets it.
    expect(await reportCheckRuns({ ...deps(), now: t.clock.now() + 86_401 })).toBe(0);
    await reportCheckRuns(deps());
    expect(host.github.checkRuns.some((r) => r.name === "roost/DayLate")).toBe(false);
  });
});

describe("the check-run outbox keeps a day of sent rows", () => {
  test("rows sent more than a day ago are pruned a piece at a time; younger ones and those not yet sent stay", async () => {
    const pipeline = await createPipeline(t, owner, projectId, { name: "Pruned" });
    const sentYoung = await build(pipeline.id, REPORTS, "failed");
    await reportCheckRuns(deps());
    const unsent = await build(pipeline.id, REPORTS, "failed", SHA_B);
    const rows = async () => (await t.db.execute("SELECT build_id, done FROM check_run_reports ORDER BY build_id")).rows.map((r) => ({ ...r }));
    const before = await rows();
    const sent = before.filter((r) => r.done === 1 && r.build_id !== sentYoung.id).map((r) => String(r.build_id));
    expect(sent.length).toBeGreaterThanOrEqual(3);
    // Aged by SQL: every other sent row a day and a second ago, and the unsent one too (it is still due).
    const dayAgo = t.clock.now() - 86_401;
    await t.db.execute({
      sql: `UPDATE check_run_reports SET updated_at = ? WHERE build_id IN (${sent.map(() => "?").join(", ")}) OR build_id = ?`,
      args: [dayAgo, ...sent, unsent.id],
    });

    const removed: number[] = [];
    let n: number;
    do removed.push((n = await pruneCheckRunReports(t.db, t.clock.now(), 2)));
    while (n === 2);
    expect(removed).toEqual([...Array(Math.floor(sent.length / 2)).fill(2), sent.length % 2]);
    expect(await rows()).toEqual(before.filter((r) => !sent.includes(String(r.build_id))));
    expect((await rows()).map((r) => r.build_id)).toEqual(expect.arrayContaining([sentYoung.id, unsent.id]));
  });
});

describe("notifications", () => {
  test("Slack and JSON webhooks name the failed tests and link to the build's Tests tab", async () => {
    const pipeline = await createPipeline(t, owner, projectId, { name: "Notified" });
    const hook = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;
    for (const body of [
      { name: "chat", channel: "slack", events: ["failed"], slack: { url: hook("/slack") } },
      { name: "bot", channel: "webhook", events: ["failed"], webhook: { url: hook("/hook"), secret: "a-signing-secret-of-some-length" } },
    ]) {
      expect((await t.call("POST", `/v1/projects/${projectId}/notifications`, { token: owner, body })).status).toBe(201);
    }
    received = [];
    const b = await build(pipeline.id, REPORTS, "failed");
    for (let i = 0; i < 3; i++) await dispatchNotifications(t.ctx, BASE);
    const tab = `${BASE}/projects/${projectId}/builds/${b.id}?tab=tests`;
    // Earlier builds of this project may be announced in the same passes, in any order: this build's message.
    const slack = received.find((r) => r.path === "/slack" && String(r.body.text).includes(b.id))!.body.text as string;
    expect(slack.split("\n").slice(2)).toEqual([
      "step pre_build failed with exit code 1",
      "4 of 12 tests failed:",
      '• test/broken_test.dart › loading test/broken_test.dart (test/broken_test.dart): Failed to load "test/broken_test.dart":',
      "• test/counter_test.dart › Counter value should be decremented (test/counter_test.dart:18): Expected: <-1>",
      "• test/widget_test.dart › Counter shows the title (test/widget_test.dart:31): Test failed. See exception logs above.",
      "• com.example.counter.CounterRepositoryTest › migratesVersion1Preferences: org.opentest4j.AssertionFailedError: expected: <7> but was: <0>",
      tab,
    ]);
    const json = received.find((r) => r.path === "/hook" && r.body.build?.id === b.id)!.body;
    expect(json.tests).toMatchObject({ summary: "6 passed, 4 failed, 2 skipped", total: 12, failed: 4, url: tab });
    expect(json.tests.failed_tests[1]).toEqual({
      suite: "test/counter_test.dart",
      name: "Counter value should be decremented",
      message: "Expected: <-1>\n  Actual: <1>\n",
      file: "test/counter_test.dart",
      line: 18,
    });
  });

  test("e-mail names the failed tests with file and line and links to the Tests tab", async () => {
    const smtp = await startSmtpServer();
    try {
      const pipeline = await createPipeline(t, owner, projectId, { name: "Mailed" });
      const body = { name: "mail", channel: "email", events: ["failed"], email: smtp.settings(["team@example.test"]) };
      expect((await t.call("POST", `/v1/projects/${projectId}/notifications`, { token: owner, body })).status).toBe(201);
      const b = await build(pipeline.id, REPORTS, "failed");
      for (let i = 0; i < 3; i++) await dispatchNotifications(t.ctx, BASE);
      // Earlier failed builds of this project may be mailed in the same passes: this build's message.
      const message = smtp.mail().find((m) => String(m.body).includes(b.id));
      const text = String(message.body);
      expect(text).toContain("Tests:    6 passed, 4 failed, 2 skipped");
      // The failed tests close the message, after the build's link.
      expect(text).toEndWith(
        [
          "",
          "4 of 12 tests failed:",
          '  - test/broken_test.dart › loading test/broken_test.dart (test/broken_test.dart): Failed to load "test/broken_test.dart":',
          "  - test/counter_test.dart › Counter value should be decremented (test/counter_test.dart:18): Expected: <-1>",
          "  - test/widget_test.dart › Counter shows the title (test/widget_test.dart:31): Test failed. See exception logs above.",
          "  - com.example.counter.CounterRepositoryTest › migratesVersion1Preferences: org.opentest4j.AssertionFailedError: expected: <7> but was: <0>",
          `${BASE}/projects/${projectId}/builds/${b.id}?tab=tests`,
          "",
        ].join("\n"),
      );
    } finally {
      smtp.stop();
    }
  });
});
