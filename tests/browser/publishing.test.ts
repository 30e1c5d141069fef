// Publishing in the web app, in a real Chromium (docs/web-app.md "Publishing"): a build's page shows
// a deployment waiting for approval; the environment's listed approver sees Approve and Reject and
// approves it, and the page then says who decided and when, and later what the store answered;
// a developer sees the same state without the buttons. The project's Deployments tab shows what
// each track holds now and the history (from which build and commit, by whom, the store's answer),
// per environment, and promotes a published build to another environment, as does the build page.
// axe-core on each view in light and dark mode and at phone width; screenshots go to
// ROOST_SCREENSHOTS_DIR when set (docs/screenshots/build-publishing*.png, deployments.png).
//
// The daemon runs in this process behind Bun.serve (tests/helpers/app.ts); builds and publishes
// are made through the runner protocol, as a runner sends them (tests/helpers/publishing.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";

import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { createPipeline, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import { loginCapability, userWithRole, type TestApp } from "../helpers/app.ts";
import { connectRunner, publishNext, putEnvironment, runBuild, type TestRunner } from "../helpers/publishing.ts";
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

const SHOTS = screenshotsDir("publishing");
const APPROVER = "release-manager@example.test";
const DEVELOPER = "dev@example.test";

let ci: CiFixture;
let t: TestApp;
let served: ServedApp;
let base = "";
let tb: TestBrowser;
let runner: TestRunner;
let publisher: TestRunner;
const contexts: Record<string, BrowserContext> = {};
const errors: string[] = [];
const a11y: Record<string, unknown[]> = {};
const builds: any[] = [];

const PUBLISHERS = [
  { type: "google_play", name: "play", environment: "testers", package_name: "com.example.app", track: "internal", notes: { text: "Faster start" } },
  { type: "google_play", name: "play-production", environment: "production", package_name: "com.example.app", track: "production", user_fraction: 0.1 },
];

async function signedIn(email: string, options: { dark?: boolean; phone?: boolean } = {}): Promise<BrowserContext> {
  return signedInContext(tb.browser, base, email, {
    t,
    viewport: options.phone ? { width: 390, height: 844 } : { width: 1280, height: 900 },
    colorScheme: options.dark ? "dark" : "light",
  });
}

async function pageAs(email: string): Promise<Page> {
  contexts[email] ??= await signedIn(email);
  return newPage(contexts[email]!, errors);
}

/** A build's page opened as `email`, and its Publishing section. */
async function publishingAs(email: string, build: { id: string }) {
  const page = await pageAs(email);
  await page.goto(`${base}/projects/${ci.projectId}/builds/${build.id}`);
  return { page, section: page.getByRole("region", { name: "Publishing" }) };
}

async function deploymentsOf(buildId: string): Promise<any[]> {
  return (await t.call("GET", `/v1/builds/${buildId}/deployments`, { token: ci.owner })).body.deployments;
}

const text = async (locator: { textContent(): Promise<string | null> }) => ((await locator.textContent()) ?? "").replace(/\s+/g, " ").trim();

beforeAll(async () => {
  // On the real clock (two hours back, as the set-up advances it), from before the owner's session is made.
  ci = await startCiFixture({}, { clockStart: Math.floor(Date.now() / 1000) - 7200 });
  ({ t } = ci);
  served = await serveToBrowser(t);
  ({ base, tb } = served);
  const approver = await userWithRole(t, ci.owner, "developer", APPROVER);
  await t.call("PUT", `/v1/projects/${ci.projectId}/members/${approver.id}`, { token: ci.owner, body: { role: "maintainer" } });
  const developer = await userWithRole(t, ci.owner, "developer", DEVELOPER);
  await t.call("PUT", `/v1/projects/${ci.projectId}/members/${developer.id}`, { token: ci.owner, body: { role: "developer" } });
  await putEnvironment(t, ci.owner, ci.projectId, "testers");
  await putEnvironment(t, ci.owner, ci.projectId, "production", { requires_approval: true, approvers: [APPROVER] });
  const pipeline = await createPipeline(t, ci.owner, ci.projectId, { name: "android-release", execution_config: { publish: PUBLISHERS } });
  runner = await connectRunner(t, ci.owner, "linux-1");
  publisher = await connectRunner(t, ci.owner, "linux-publish");
  // Build 1: refused by Play for testers; its production deployment rejected by the approver.
  builds.push(await runBuild(t, ci.owner, runner, ci.projectId, pipeline.id, { files: { "build/app/outputs/bundle/release/app-release.aab": "bundle 41" } }));
  t.clock.advance(90);
  await publishNext(t, publisher, { failure: "Google Play: APK specifies a version code that has already been used." });
  const waiting1 = (await deploymentsOf(builds[0].id)).find((d) => d.environment === "production");
  const approverToken = approver.token;
  t.clock.advance(600);
  expect((await t.call("POST", `/v1/deployments/${waiting1.id}/reject`, { token: approverToken })).status).toBe(200);
  // Build 2: published to testers, waiting for approval to production.
  t.clock.advance(1800);
  builds.push(await runBuild(t, ci.owner, runner, ci.projectId, pipeline.id, { files: { "build/app/outputs/bundle/release/app-release.aab": "bundle 42" } }));
  t.clock.advance(60);
  await publishNext(t, publisher, { summary: "version code 42 on internal (completed)", version: "42" });
  t.clock.set(Math.floor(Date.now() / 1000));
}, 60_000);
afterAll(() => closeScreenshotsWorld(SHOTS, served, ci));

describe("a build's page", () => {
  test("a developer sees the deployment waiting for the environment's approver, without Approve or Reject", async () => {
    const { page, section } = await publishingAs(DEVELOPER, builds[1]);
    const waiting = section.locator("li.deployment", { hasText: "play-production" });
    await waiting.waitFor();
    expect(await text(waiting.locator(".deployment-head"))).toBe("‖ waiting for approval play-production to production (com.example.app production)");
    expect(await text(waiting.locator("dd").nth(1))).toBe(`Waits for ${APPROVER}.`);
    expect(await section.getByRole("button", { name: /Approve|Reject/ }).count()).toBe(0);
    const published = section.locator("li.deployment", { hasText: "play to testers" });
    expect(await text(published.locator(".deployment-head"))).toBe("✓ published play to testers (com.example.app internal)");
    expect(await text(published.locator("dd").nth(2))).toBe("version code 42 on internal (completed) (version 42)");
    a11y["build page, developer"] = await axeViolations(page);
    await page.close();
  });

  test("the listed approver approves it; the page says who decided and when, then the store's answer", async () => {
    const { page, section } = await publishingAs(APPROVER, builds[1]);
    const approve = section.getByRole("button", { name: `Approve play-production of build #${builds[1].build_number} to production` });
    await approve.waitFor();
    expect(await section.getByRole("button", { name: `Reject play-production of build #${builds[1].build_number} to production` }).isVisible()).toBe(true);
    a11y["build page, approver"] = await axeViolations(page);
    await section.scrollIntoViewIfNeeded();
    await page.evaluate("window.scrollTo(0, document.getElementById('h-publishing').getBoundingClientRect().top + window.scrollY - 8)");
    await page.screenshot({ path: join(SHOTS, "build-publishing.png") });
    // The app's clock stood still since the set-up; the page says "… ago" by the browser's clock:
    // the decision is dated now, however long the tests before this one took (a minute said "1 minute ago").
    t.clock.set(Math.floor(Date.now() / 1000));
    await approve.click();
    const item = section.locator("li.deployment", { hasText: "play-production" });
    await until("the decision", async () => (await text(item.locator("dd").nth(1))).startsWith(`Approved by ${APPROVER}`));
    expect(await text(item.locator("dd").nth(1))).toMatch(new RegExp(`^Approved by ${APPROVER.replace(/\./g, "\\.")} (now|\\d+ seconds? ago)$`));
    expect(await item.locator("dd time").nth(1).getAttribute("title")).not.toBe("");
    expect(await text(item.locator(".badge"))).toBe("→ approved, waiting for a runner");
    expect(await section.getByRole("button", { name: /Approve/ }).count()).toBe(0);
    const [d] = (await deploymentsOf(builds[1].id)).filter((x) => x.environment === "production");
    expect(d).toMatchObject({ status: "approved", decided_by: APPROVER });
    // A runner publishes it; the page follows.
    await publishNext(t, publisher, { summary: "version code 42 on production (inProgress, 10 %)", version: "42", url: "https://play.google.com/console" });
    await until("the store's answer", async () => (await text(item.locator(".badge"))) === "✓ published", 15_000);
    expect(await text(item.locator("dd").nth(2))).toBe(
      "version code 42 on production (inProgress, 10 %) (version 42) Open com.example.app production in the store",
    );
    await page.close();
  });

  test("a developer publishes the build to another environment from its page", async () => {
    const page = await pageAs(DEVELOPER);
    await page.goto(`${base}/projects/${ci.projectId}/builds/${builds[0].id}`);
    await page.getByText("Publish to another environment").click();
    const form = page.getByRole("form", { name: `Publish build #${builds[0].build_number} to another environment` });
    await form.getByLabel("Publisher").selectOption("play");
    await form.getByLabel("Environment").selectOption("production");
    await form.getByLabel("Track").fill("beta");
    await form.getByRole("button", { name: "Publish to production" }).click();
    await form.getByText(`play of build #${builds[0].build_number} to production: waiting for approval.`).waitFor();
    const promoted = (await deploymentsOf(builds[0].id)).find((d) => d.trigger === "promotion");
    expect(promoted).toMatchObject({ environment: "production", status: "waiting_approval", requested_by: DEVELOPER, config: { track: "beta" } });
    // It joins the list, with who asked.
    const item = page.getByRole("region", { name: "Publishing" }).locator("li.deployment", { hasText: "com.example.app beta" });
    await item.waitFor();
    expect(await text(item.locator("dd").first())).toMatch(new RegExp(`^Promoted by ${DEVELOPER.replace(/\./g, "\\.")} `));
    a11y["build page, promotion"] = await axeViolations(page);
    // The approver rejects it from the API; what is refused stays told.
    const approverToken = (await t.call("POST", "/v1/auth/local/login", { body: { email: APPROVER, recovery_capability: await loginCapability(t) } })).body
      .session_token;
    expect((await t.call("POST", `/v1/deployments/${promoted.id}/reject`, { token: approverToken })).status).toBe(200);
    await page.close();
  });
});

describe("the project's Deployments tab", () => {
  test("what each track holds now, and the history with build, commit, who asked, who decided and the store's answer", async () => {
    const page = await pageAs("owner@example.test");
    await page.goto(`${base}/projects/${ci.projectId}?tab=deployments`);
    const now = page.getByRole("table", { name: "What each environment's tracks and groups hold now" });
    await now.locator("tbody tr").first().waitFor();
    const rows = await now.locator("tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].slice(0, 4).map((td) => td.textContent)));
    expect(rows).toEqual([
      ["production", "com.example.app production · play-production", "42", `#${builds[1].build_number} ${builds[1].commit_sha.slice(0, 8)}`],
      ["testers", "com.example.app internal · play", "42", `#${builds[1].build_number} ${builds[1].commit_sha.slice(0, 8)}`],
    ]);
    // The history is a load of its own, beside the environments' (the table above): its rows awaited too.
    const history = page.getByRole("table", { name: "Deployments, newest first" });
    await history.locator("tbody tr").first().waitFor();
    expect(await history.locator("tbody tr").count()).toBe(5);
    const rejected = history.locator("tbody tr", { hasText: "rejected" }).last();
    expect(await text(rejected.locator("td").nth(5))).toMatch(new RegExp(`^Rejected by ${APPROVER.replace(/\./g, "\\.")} `));
    expect(await text(rejected.locator("td").nth(3))).toBe(`#${builds[0].build_number} ${builds[0].commit_sha.slice(0, 8)} main`);
    // The owner is a maintainer, but production lists its own approver: no buttons for them there.
    expect(await history.getByRole("button", { name: /^(Approve|Reject)/ }).count()).toBe(0);
    a11y["deployments tab"] = await axeViolations(page);
    await page.screenshot({ path: join(SHOTS, "deployments.png"), fullPage: true });
    // One environment.
    await page.getByLabel("Environment", { exact: true }).selectOption("testers");
    await until(
      "the testers' history",
      async () => (await page.getByRole("table", { name: "Deployments to testers, newest first" }).locator("tbody tr").count()) === 2,
    );
    expect(new URL(page.url()).search).toBe("?tab=deployments&environment=testers");
    expect(await now.locator("tbody tr").count()).toBe(1);
    await page.close();
  });

  test("a developer promotes what testers have to production with a staged rollout", async () => {
    const page = await pageAs(DEVELOPER);
    await page.goto(`${base}/projects/${ci.projectId}?tab=deployments&environment=testers`);
    await page.getByRole("button", { name: `Promote build #${builds[1].build_number} (play) to another environment` }).click();
    const form = page.getByRole("form", { name: `Publish build #${builds[1].build_number} to another environment` });
    await form.getByLabel("Track").fill("production");
    await form.getByLabel("Rollout (% of users)").fill("5");
    // Only the other environments are offered.
    expect(await form.getByLabel("Environment").locator("option").allTextContents()).toEqual(["production (needs approval)"]);
    await form.getByRole("button", { name: "Publish to production" }).click();
    await form.getByText(`play of build #${builds[1].build_number} to production: waiting for approval.`).waitFor();
    const promoted = (await deploymentsOf(builds[1].id)).find((d) => d.trigger === "promotion");
    expect(promoted).toMatchObject({
      environment: "production",
      status: "waiting_approval",
      requested_by: DEVELOPER,
      config: { track: "production", user_fraction: 0.05 },
    });
    a11y["deployments tab, promotion"] = await axeViolations(page);
    await page.close();
  });

  test("dark mode and phone width stay readable: the build page's waiting deployment and the Deployments tab", async () => {
    const dark = await signedIn(APPROVER, { dark: true, phone: true });
    const phone = await newPage(dark, errors);
    await phone.goto(`${base}/projects/${ci.projectId}/builds/${builds[1].id}`);
    const section = phone.getByRole("region", { name: "Publishing" });
    await section.getByRole("button", { name: /^Approve play of build/ }).waitFor();
    a11y["build page (dark, phone)"] = await axeViolations(phone);
    expect(await phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")).toBe(true);
    await phone.evaluate("window.scrollTo(0, document.getElementById('h-publishing').getBoundingClientRect().top + window.scrollY - 8)");
    await phone.screenshot({ path: join(SHOTS, "build-publishing-phone-dark.png") });
    await phone.goto(`${base}/projects/${ci.projectId}?tab=deployments`);
    await phone.getByRole("table", { name: "Deployments, newest first" }).waitFor();
    // The approver of production sees Approve on the waiting promotion here too.
    expect(await phone.getByRole("button", { name: /^Approve play of build/ }).count()).toBe(1);
    a11y["deployments tab (dark, phone)"] = await axeViolations(phone);
    // Nothing is wider than the screen (but the column heads, clipped and left to screen readers):
    // each table row is a card there, each cell named by its column.
    const wide = await phone.evaluate(
      "[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('thead')).map((e) => e.tagName + '.' + e.className).slice(0, 5)",
    );
    expect(wide).toEqual([]);
    expect(await phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")).toBe(true);
    await phone.evaluate("window.scrollTo(0, document.getElementById('h-deployments').getBoundingClientRect().top + window.scrollY - 8)");
    await phone.screenshot({ path: join(SHOTS, "deployments-phone-dark.png") });
    await dark.close();
  });

  test("a developer retries a failed publish from the build page; the new deployment says who asked", async () => {
    const { page, section } = await publishingAs(DEVELOPER, builds[0]);
    const failed = section.locator("li.deployment", { hasText: "play to testers" });
    await failed.waitFor();
    expect(await text(failed.locator(".badge"))).toBe("✕ failed");
    expect(await text(failed.locator("dd").nth(2).locator(".field-error"))).toBe("Google Play: APK specifies a version code that has already been used.");
    await section.getByRole("button", { name: `Retry play of build #${builds[0].build_number} to testers` }).click();
    const retried = section.locator("li.deployment", { hasText: `Retried by ${DEVELOPER}` });
    await retried.waitFor();
    expect(await text(retried.locator(".badge"))).toBe("→ approved, waiting for a runner");
    a11y["build page, failed and retried"] = await axeViolations(page);
    const again = (await deploymentsOf(builds[0].id)).find((d) => d.trigger === "retry");
    expect(again).toMatchObject({ environment: "testers", status: "approved", requested_by: DEVELOPER, retry_of: expect.any(String) });
    await page.close();
  });

  test("no serious or critical accessibility violation, no script error, no CSP violation", () => {
    expect(a11y).toEqual(Object.fromEntries(Object.keys(a11y).map((k) => [k, []])));
    expect(Object.keys(a11y).length).toBeGreaterThanOrEqual(8);
    expect(errors).toEqual([]);
  });
});
