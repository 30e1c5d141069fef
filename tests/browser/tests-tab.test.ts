// Test results in the web app, in a real Chromium (docs/web-app.md "Tests", "Pipeline charts"):
// the build page's Tests tab (failures first with message, stack trace linked to the source host,
// output, the strip of last results, a filter and a search, analyzer issues, coverage with the
// files that lost the most, a report Roost could read only in part), the builds list's one-line
// summary, and a pipeline's page with its charts (each with its numbers as a table) and its flaky
// tests. axe-core on each page, in light and dark mode and at phone width; screenshots go to
// ROOST_SCREENSHOTS_DIR when set (docs/screenshots/build-tests*.png, pipeline-trends.png).
//
// The daemon runs in this process behind Bun.serve (tests/helpers/app.ts) with a GitHub
// integration on the host-API stand-in; builds and their reports are made through the runner
// protocol, as a runner sends them.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { SHA_A, SHA_B, createPipeline, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import type { TestApp } from "../helpers/app.ts";
import { connectRunner, uploadArtifact, type TestRunner } from "../helpers/publishing.ts";
import {
  axeViolations,
  newPage,
  closeScreenshotsWorld,
  screenshotsDir,
  serveToBrowser,
  signedInContext,
  until,
  type ServedApp,
  type TestBrowser,
} from "./browser.ts";

const FIXTURES = join(import.meta.dir, "../fixtures/test-results");
const fixture = (name: string) => readFileSync(join(FIXTURES, name), "utf8");
const WORKSPACE = "/home/ci/roost/jobs/5d1c0e7a";
const SHOTS = screenshotsDir("tests-tab");

let ci: CiFixture;
let t: TestApp;
let pipelineId = "";
let served: ServedApp;
let base = "";
let tb: TestBrowser;
let context: BrowserContext;
let page: Page;
let runner: TestRunner;
const errors: string[] = [];
const a11y: Record<string, unknown[]> = {};
const built: { id: string; number: number }[] = [];

const flutter = fixture("flutter-machine.jsonl");
const flutterFixed = flutter
  .split("\n")
  .filter((l) => !l.includes('"testID":10,"error"'))
  .join("\n")
  .replace('{"testID":10,"result":"failure"', '{"testID":10,"result":"success"');
const lcov = fixture("lcov.info");

async function build(reports: Record<string, string>, o: { commit?: string; status?: "succeeded" | "failed"; rerunOf?: string; artifact?: number } = {}) {
  const made = o.rerunOf
    ? await t.call("POST", `/v1/builds/${o.rerunOf}/rerun`, { token: ci.owner })
    : await t.call("POST", `/v1/projects/${ci.projectId}/builds`, { token: ci.owner, body: { pipeline_id: pipelineId, commit_sha: o.commit ?? SHA_A } });
  const job = (await t.call("POST", `/v1/runners/${runner.id}/jobs/claim`, { token: runner.token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } }))
    .body.job;
  // Builds take a while, so the duration chart has something to draw.
  t.clock.advance(5);
  for (const [path, text] of Object.entries(reports)) {
    await t.call("PUT", `/v1/runners/${runner.id}/jobs/${job.job_id}/test-reports?path=${encodeURIComponent(path)}`, {
      token: runner.token,
      raw: text,
      contentType: "application/octet-stream",
      headers: { "x-roost-workspace": WORKSPACE },
    });
  }
  if (o.artifact) await uploadArtifact(t, runner, job.job_id, "build/app/outputs/flutter-apk/app-release.apk", "x".repeat(o.artifact));
  t.clock.advance(60 + built.length * 17);
  await t.call("POST", `/v1/runners/${runner.id}/jobs/${job.job_id}/finish`, {
    token: runner.token,
    body: { status: o.status ?? "failed", exit_code: o.status === "succeeded" ? 0 : 1, line_count: 0 },
  });
  built.push({ id: made.body.build.id, number: made.body.build.build_number });
  return built.at(-1)!;
}

async function checkA11y(name: string, p: Page = page): Promise<void> {
  a11y[name] = await axeViolations(p);
}

beforeAll(async () => {
  // On the real clock (an hour back, as the builds advance it), from before the owner's session is made.
  ci = await startCiFixture({}, { clockStart: Math.floor(Date.now() / 1000) - 3600 });
  ({ t } = ci);
  served = await serveToBrowser(t);
  ({ base, tb } = served);
  pipelineId = (await createPipeline(t, ci.owner, ci.projectId, { name: "android" })).id;
  runner = await connectRunner(t, ci.owner, "linux-1");
  // History on main: a passing build with coverage, the failing one, its passing re-run (flaky).
  await build({ "build/test-results/flutter.json": flutterFixed, "coverage/lcov.info": lcov }, { status: "succeeded", artifact: 3000 });
  const lostCoverage = lcov.replace("DA:3,1\nDA:4,3\nDA:6,1\nDA:7,1", "DA:3,1\nDA:4,0\nDA:6,0\nDA:7,0");
  await build(
    {
      "build/test-results/flutter.json": flutter,
      "build/test-results/cut.json": fixture("flutter-machine-cut.jsonl").split("\n").slice(0, 12).join("\n"),
      "build/app/test-results/testDebugUnitTest/TEST-com.example.counter.CounterRepositoryTest.xml": fixture(
        "gradle-TEST-com.example.counter.CounterRepositoryTest.xml",
      ),
      "coverage/lcov.info": lostCoverage,
      "build/analyze.txt": fixture("dart-analyze-machine.txt"),
    },
    { commit: SHA_B, artifact: 3400 },
  );
  await build({ "build/test-results/flutter.json": flutterFixed, "coverage/lcov.info": lcov }, { rerunOf: built[1]!.id, status: "succeeded", artifact: 3300 });
  // Setup is over (the fixture's owner): a local sign-in needs the one-time capability `roost login` mints.
  context = await signedInContext(tb.browser, base, "owner@example.test", { t, colorScheme: "light" });
  page = await newPage(context, errors);
}, 60_000);
afterAll(() => closeScreenshotsWorld(SHOTS, served, ci));

describe("the Tests tab", () => {
  test("opens on the failures, each with its message, its stack trace linked to the line on GitHub and its last results", async () => {
    const failing = built[1]!;
    await page.goto(`${base}/projects/${ci.projectId}/builds/${failing.id}?tab=tests`);
    const tabs = page.getByRole("navigation", { name: "Build sections" });
    expect(await tabs.getByRole("link", { name: "Tests (7 failed)" }).getAttribute("aria-current")).toBe("page");
    await page.getByRole("heading", { name: "Tests", exact: true }).waitFor();
    expect((await page.locator(".test-counts").textContent())!.replace(/\s+/g, " ")).toContain("✕ 7 failed ✓ 6 passed – 2 skipped");
    // The report cut short says so, and what was kept.
    expect(await page.locator(".notice", { hasText: "build/test-results/cut.json" }).textContent()).toContain(
      "was read in part: The report ends before the test run's done event",
    );
    await page.locator(".test-case").first().waitFor();
    await page.evaluate("window.scrollTo(0, document.querySelector('nav.tabs').getBoundingClientRect().top + window.scrollY - 8)");
    await page.screenshot({ path: join(SHOTS, "build-tests.png") });
    const statuses = await page.locator(".test-case > details > summary .badge:first-child").allTextContents();
    expect(statuses.slice(0, 7).every((s) => /failed|error/.test(s))).toBe(true);
    expect(statuses.at(-1)).toContain("passed");
    const decremented = page.locator(".test-case", { hasText: "Counter value should be decremented" }).first();
    expect(await decremented.locator("details").getAttribute("open")).not.toBeNull();
    expect(await decremented.locator(".test-message").textContent()).toBe("Expected: <-1>\n  Actual: <1>\n");
    expect(await decremented.locator(".badge-new").textContent()).toBe("new failure");
    const frame = decremented.locator(".test-stack a", { hasText: "test/counter_test.dart 22:7" });
    expect(await frame.getAttribute("href")).toBe(`https://github.example.test/acme/app/blob/${SHA_B}/test/counter_test.dart#L22`);
    expect(await decremented.getByRole("link", { name: "test/counter_test.dart:18" }).getAttribute("href")).toBe(
      `https://github.example.test/acme/app/blob/${SHA_B}/test/counter_test.dart#L18`,
    );
    // The strip: this build (failed) and the one before (passed), newest first, each a word too.
    const strip = decremented.getByRole("list", { name: /Last 2 results of this test on main/ });
    expect(await strip.getByRole("link").allTextContents()).toEqual([`✕#${failing.number} failed`, `✓#${built[0]!.number} passed`]);
    // The widget test failed before too: still failing, since that build.
    expect(await page.locator(".test-case", { hasText: "Counter shows the title" }).first().locator("details > summary").first().textContent()).toContain(
      `failing since #${built[0]!.number}`,
    );
    // What a widget test printed, its paths linked too.
    const printed = page.locator(".test-case", { hasText: "Counter shows the title" }).first().locator(".test-output");
    await printed.locator("summary").click();
    expect(await printed.locator("a", { hasText: "test/widget_test.dart:35:5" }).first().getAttribute("href")).toBe(
      `https://github.example.test/acme/app/blob/${SHA_B}/test/widget_test.dart#L35`,
    );
    await checkA11y("tests tab");
  });

  test("a filter and a search narrow the cases; analyzer issues and coverage follow", async () => {
    await page.getByLabel("Result", { exact: true }).selectOption({ label: "Skipped" });
    await until(
      "the skipped cases",
      async () => (await page.locator(".test-case").count()) === 2 && (await page.locator(".test-case.test-skipped").count()) === 2,
    );
    expect(await page.locator(".test-case strong").allTextContents()).toEqual(["Counter value should reset", "clearsOnSignOut"]);
    await page.getByLabel("Result", { exact: true }).selectOption({ label: "All, failures first" });
    await page.getByLabel("Test name or file").fill("title");
    await until("the one case found", async () => (await page.locator(".test-case").count()) === 1);
    expect(await page.locator(".test-case strong").allTextContents()).toEqual(["Counter shows the title"]);
    // Analyzer issues, errors first, linked to their lines.
    const issues = page.getByRole("table", { name: "Analyzer issues, errors first" });
    expect(await issues.locator("tbody tr").count()).toBe(4);
    expect(await issues.getByRole("link", { name: "test/broken_test.dart:4" }).getAttribute("href")).toBe(
      `https://github.example.test/acme/app/blob/${SHA_B}/test/broken_test.dart#L4`,
    );
    // Coverage against the build before on main, the file that lost most first.
    const coverage = page.getByRole("region", { name: "Coverage" });
    expect((await coverage.locator("p").first().textContent())!.replace(/\s+/g, " ")).toBe(
      `47.62 % of 21 lines -14.28 points against build #${built[0]!.number} on main (61.9 %)`,
    );
    const first = coverage.locator("tbody tr").first();
    expect(await first.locator("td").allTextContents()).toEqual(["lib/counter.dart", "1 of 6", "16.67 %", "-50 points"]);
    await checkA11y("tests tab, filtered");
  });

  test("a build without reports says how to send them", async () => {
    const none = await build({}, { status: "succeeded" });
    await page.goto(`${base}/projects/${ci.projectId}/builds/${none.id}?tab=tests`);
    await page.getByText("This build sent no test report.").waitFor();
    // The log tab is the default, and comes back.
    await page.getByRole("link", { name: "Log, steps and artifacts" }).click();
    await page.getByRole("heading", { name: "Steps" }).waitFor();
  });

  test("dark mode and phone width stay readable", async () => {
    const dark = await tb.browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: "dark", storageState: await context.storageState() });
    const phone = await newPage(dark, errors);
    await phone.goto(`${base}/projects/${ci.projectId}/builds/${built[1]!.id}?tab=tests`);
    await phone.locator(".test-case").first().waitFor();
    await checkA11y("tests tab (dark, phone)", phone);
    // Nothing is wider than the screen but the tables, which scroll on their own.
    expect(await phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")).toBe(true);
    await phone.screenshot({ path: join(SHOTS, "build-tests-phone-dark.png") });
    await dark.close();
  });
});

describe("lists and the pipeline's page", () => {
  test("the builds list shows each build's tests in a line, linked to its Tests tab", async () => {
    await page.goto(`${base}/projects/${ci.projectId}`);
    const row = page.locator("tr", { hasText: `#${built[1]!.number}` });
    const cell = row.getByRole("link", { name: "6 passed, 7 failed, 2 skipped" });
    expect((await cell.textContent())!.trim()).toBe("✕ 6 passed, 7 failed, 2 skipped");
    expect(await cell.getAttribute("href")).toBe(`/projects/${ci.projectId}/builds/${built[1]!.id}?tab=tests`);
    await checkA11y("project builds with tests");
  });

  test("charts of duration, success rate, tests, coverage and artifact size, each with its numbers; the flaky tests", async () => {
    await page.goto(`${base}/projects/${ci.projectId}?tab=pipelines`);
    await page.getByRole("link", { name: "Trends and flaky tests" }).click();
    await page.getByRole("heading", { name: "android: trends" }).waitFor();
    const figures = page.locator("figure.chart");
    await figures.first().waitFor();
    expect(await figures.locator("figcaption strong").allTextContents()).toEqual(["Build duration", "Success rate", "Tests", "Coverage", "Artifact size"]);
    // Each chart is an image named by its title and summary, with its numbers as a table.
    expect(await page.getByRole("img", { name: /^Success rate 3 of 4 finished builds succeeded \(75 %\)\.$/ }).count()).toBe(1);
    expect(
      await page.getByRole("img", { name: /^Coverage Line coverage 61\.9 % in the last build with coverage, the same as the first build shown\.$/ }).count(),
    ).toBe(1);
    const tests = figures.filter({ hasText: "Tests" }).nth(0);
    await tests.getByText("The numbers").click();
    expect(await tests.locator("tbody tr").first().locator("th, td").allTextContents()).toEqual([`#${built[0]!.number}`, "2", "5", "1"]);
    expect(await figures.filter({ hasText: "Artifact size" }).locator("figcaption").textContent()).toContain(
      "app-release.apk: 3.2 KB in the last build that made each.",
    );
    const flaky = page.getByRole("table", { name: "Flaky tests" });
    expect(await flaky.locator("tbody tr").first().locator("td").first().textContent()).toBe("test/counter_test.dart › Counter value should be decremented");
    expect(await flaky.locator("tbody tr").first().locator("td").nth(1).textContent()).toBe("33 % (1 of 3 runs)");
    await checkA11y("pipeline trends");
    await page.screenshot({ path: join(SHOTS, "pipeline-trends.png"), fullPage: true });
    const dark = await tb.browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: "dark", storageState: await context.storageState() });
    const phone = await newPage(dark, errors);
    await phone.goto(page.url());
    await phone.locator("figure.chart").first().waitFor();
    await checkA11y("pipeline trends (dark, phone)", phone);
    expect(await phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")).toBe(true);
    await dark.close();
  });

  test("no serious or critical accessibility violation, no script error, no CSP violation", () => {
    expect(a11y).toEqual(Object.fromEntries(Object.keys(a11y).map((k) => [k, []])));
    expect(Object.keys(a11y).length).toBeGreaterThanOrEqual(6);
    expect(errors).toEqual([]);
  });
});
