// The project settings of the web app in a real Chromium, as a maintainer: variables and secrets
// (a secret's value never reaches the page again, a file uploaded as base64, protected refs,
// replace, delete, the audit list), a schedule (the API's error beside the cron field, edit, the
// next run, a scheduled build that names its schedule), a signed-webhook notification (the API's
// error beside the secret field, its deliveries and health after a build), public badges with
// their Markdown, retention (a removed log on the build page), the build's definition source (the
// API's pipeline, then roost.yaml at a commit). A developer sees what the role allows and no
// control to change it, and a forged request is refused. axe-core on every new page.
//
// The daemon runs in this process (tests/helpers/app.ts) behind Bun.serve, so its clock is the
// test's: a schedule falls due and retention passes an hour's grace without waiting; the
// background passes (schedules, notifications, retention) are the daemon's own functions, called
// when the test has moved the clock.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server } from "bun";
import { verify } from "@octokit/webhooks-methods";
import type { BrowserContext, Page } from "playwright-core";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { runDueSchedules } from "../../lib/schedules/schedules.ts";
import { dispatchNotifications } from "../../lib/notifications/notifications.ts";
import { enforceRetention } from "../../lib/retention/retention.ts";
import { commitFiles } from "../helpers/git.ts";
import { axeViolations, browserCall, createGitProject, newPage, serveToBrowser, signedInContext, type ServedApp, type TestBrowser } from "./browser.ts";

const work = mkdtempSync(join(tmpdir(), "roost-browser-settings-"));
const repo = join(work, "app");
const OWNER = "owner@example.test";
const DEV = "dev@example.test";
const SIGNING_SECRET = "a-signing-secret-for-the-receiver";
const SECRET_VALUE = "s3cr3t-value-never-shown";

let t: TestApp;
let served: ServedApp;
let base = "";
let receiver: Server<undefined>;
const received: Array<{ event: string | null; body: any; verified: boolean }> = [];
let tb: TestBrowser;
let context: BrowserContext;
let page: Page;
let projectId = "";
let pipelineId = "";
const builds: string[] = [];
const errors: string[] = [];
const a11y: Record<string, unknown[]> = {};

/** The API as a signed-in browser calls it: its session cookie, plus the CSRF header. */
async function api(method: string, path: string, data?: unknown, ctx: BrowserContext = context): Promise<{ status: number; body: any }> {
  const res = await ctx.request.fetch(base + path, { method, headers: { "x-roost-csrf": "1" }, data });
  return { status: res.status(), body: await res.json().catch(() => null) };
}

const ok = (method: string, path: string, data?: unknown) => browserCall(context, base, method, path, data);

async function checkA11y(name: string, p: Page = page): Promise<void> {
  a11y[name] = await axeViolations(p);
}

async function tab(name: string, p: Page = page): Promise<void> {
  await p.getByRole("navigation", { name: "Project sections" }).getByRole("link", { name }).click();
}

beforeAll(async () => {
  commitFiles(repo, { "README.md": "# app\n" }, "first");
  t = await createTestApp({ ROOST_GIT_ALLOW_LOCAL_REMOTES: "true" });
  t.clock.set(Math.floor(Date.now() / 1000));
  served = await serveToBrowser(t);
  ({ base, tb } = served);
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const text = await request.text();
      const signature = (request.headers.get("x-roost-signature-256") ?? "").replace(/^sha256=/, "");
      received.push({
        event: request.headers.get("x-roost-event"),
        body: JSON.parse(text),
        verified: await verify(SIGNING_SECRET, text, `sha256=${signature}`),
      });
      return new Response("ok");
    },
  });
  // Local Only first run: the first loopback sign-in creates the owner and sets the session cookie.
  context = await signedInContext(tb.browser, base, OWNER);
  page = await newPage(context, errors);
  page.on("dialog", (d) => void (d.type() === "confirm" ? d.accept() : d.dismiss()));
  projectId = await createGitProject(ok, repo);
  pipelineId = (await ok("POST", `/v1/projects/${projectId}/pipelines`, { name: "android", execution_config: { commands: { build: ["echo build"] } } }))
    .pipeline.id;
}, 60_000);

afterAll(async () => {
  await served?.close();
  receiver?.stop(true);
  t?.close();
  rmSync(work, { recursive: true, force: true });
});

describe("project settings in the web app", () => {
  test("variables and secrets: added, replaced, deleted; a secret's value never shown; a file uploaded as base64; the audit list", async () => {
    await page.goto(`${base}/projects/${projectId}`);
    await tab("Variables and secrets");
    const form = page.getByRole("form", { name: "Add or replace a variable" });
    // The API's validation message beside the name.
    await form.getByLabel("Name").fill("bad-name");
    await form.getByLabel("Value").fill("x");
    await form.getByRole("button", { name: "Save variable" }).click();
    expect(await form.locator("#f-key-error").textContent()).toBe("must be a shell variable name (letters, digits, _; at most 128)");
    // A secret.
    await form.getByLabel("Name").fill("API_TOKEN");
    await form.getByLabel("Secret (write-only: never shown again").check();
    await form.getByLabel("Value").fill(SECRET_VALUE);
    expect(await form.getByLabel("Value").getAttribute("type")).toBe("password");
    await form.getByRole("button", { name: "Save variable" }).click();
    await page.getByText("API_TOKEN added.").waitFor();
    const row = page.locator("table.variables tr", { hasText: "API_TOKEN" });
    expect(await row.locator("td").nth(1).textContent()).toBe("hidden (write-only)");
    expect(await row.locator("td").nth(2).textContent()).toBe("secret");
    // A plain variable for protected refs only, then replaced.
    await form.getByLabel("Secret (write-only: never shown again").uncheck();
    await form.getByLabel("Name").fill("FLAVOR");
    await form.getByLabel("Value").fill("staging");
    await form.getByLabel("Protected refs (one pattern a line; empty: every build)").fill("main\nrelease/*");
    await form.getByRole("button", { name: "Save variable" }).click();
    await page.getByText("FLAVOR added.").waitFor();
    expect(await page.locator("table.variables tr", { hasText: "FLAVOR" }).locator("td").nth(3).textContent()).toBe("main, release/*");
    // Replace: the form is filled with its settings (protected refs kept), the value typed again.
    await page.getByRole("button", { name: "Replace FLAVOR" }).click();
    expect(await form.getByLabel("Name").inputValue()).toBe("FLAVOR");
    expect(await form.getByLabel("Protected refs (one pattern a line; empty: every build)").inputValue()).toBe("main\nrelease/*");
    expect(await form.getByLabel("Value").inputValue()).toBe("");
    await form.getByLabel("Value").fill("production");
    await form.getByRole("button", { name: "Save variable" }).click();
    await page.getByText("FLAVOR replaced.").waitFor();
    expect(await page.locator("table.variables tr", { hasText: "FLAVOR" }).locator("td").nth(1).textContent()).toBe("production");
    // A file, uploaded: the API holds its bytes as base64.
    const bytes = Buffer.from([0, 1, 2, 250, 251, 252, 10, 13]);
    await form.getByLabel("File (the runner writes it").check();
    await form.getByLabel("Name").fill("CONFIG_FILE");
    await form.getByLabel("File (at most 256 KiB)").setInputFiles({ name: "config.bin", mimeType: "application/octet-stream", buffer: bytes });
    await form.getByRole("button", { name: "Save variable" }).click();
    await page.getByText("CONFIG_FILE added.").waitFor();
    const listed = (await ok("GET", `/v1/projects/${projectId}/variables`)).variables;
    expect(listed.find((v: { key: string }) => v.key === "CONFIG_FILE")).toMatchObject({ file: true, secret: false, value: bytes.toString("base64") });
    expect(listed.find((v: { key: string }) => v.key === "API_TOKEN")).toMatchObject({ secret: true, value: null });
    expect(listed.find((v: { key: string }) => v.key === "FLAVOR")).toMatchObject({ value: "production", protected_refs: ["main", "release/*"] });
    // A pipeline's own variable.
    await page.getByLabel("Variables of", { exact: true }).selectOption({ label: "pipeline android" });
    await page.getByRole("heading", { name: "Variables of pipeline android" }).waitFor();
    await form.getByLabel("File (the runner writes it").uncheck();
    await form.getByLabel("Name").fill("GRADLE_OPTS");
    await form.getByLabel("Value").fill("-Xmx2g");
    await form.getByRole("button", { name: "Save variable" }).click();
    await page.getByText("GRADLE_OPTS added.").waitFor();
    expect((await ok("GET", `/v1/pipelines/${pipelineId}/variables`)).variables.map((v: { key: string }) => v.key)).toEqual(["GRADLE_OPTS"]);
    // Delete, and the audit list names every change by whom, never a value.
    await page.getByLabel("Variables of", { exact: true }).selectOption({ label: "the project (every pipeline)" });
    await page.getByRole("button", { name: "Delete FLAVOR" }).click();
    await page.getByText("FLAVOR deleted.").waitFor();
    expect(await page.locator("table.variables tr", { hasText: "FLAVOR" }).count()).toBe(0);
    const audit = page.locator(".variable-changes li");
    await expect(audit.count()).resolves.toBe(6);
    const texts = (await audit.allTextContents()).map((x) => x.replace(/^[^:]*: /, ""));
    expect(texts).toEqual([
      `${OWNER} deleted variable FLAVOR of the project`,
      `${OWNER} created variable GRADLE_OPTS of pipeline android`,
      `${OWNER} created variable CONFIG_FILE of the project`,
      `${OWNER} updated variable FLAVOR of the project`,
      `${OWNER} created variable FLAVOR of the project`,
      `${OWNER} created secret API_TOKEN of the project`,
    ]);
    expect(await page.content()).not.toContain(SECRET_VALUE);
    await checkA11y("variables and secrets");
  }, 60_000);

  test("a signed-webhook notification: the API's error beside the secret, then created; write-only fields", async () => {
    await tab("Notifications");
    await page.getByRole("button", { name: "New notification" }).click();
    const form = page.getByRole("form", { name: "New notification" });
    await form.getByLabel("Name").fill("Team hook");
    await form.getByLabel("Channel").selectOption("webhook");
    await form.getByLabel("canceled").check();
    await form.getByLabel("URL (write-only)").fill(`http://127.0.0.1:${receiver.port}/roost`);
    await form.getByLabel("Signing secret (write-only, at least 16 characters)").fill("short");
    await form.getByRole("button", { name: "Create notification" }).click();
    expect(await form.locator("#f-secret-error").textContent()).toBe("must be at least 16 characters");
    await form.getByLabel("Signing secret (write-only, at least 16 characters)").fill(SIGNING_SECRET);
    await form.getByRole("button", { name: "Create notification" }).click();
    const card = page.locator(".notification", { hasText: "Team hook" });
    await card.waitFor();
    expect(await card.textContent()).toContain(`Signed webhook (JSON) to 127.0.0.1:${receiver.port}`);
    expect(await card.textContent()).toContain("nothing sent yet");
    expect(await card.textContent()).toContain("on failed, fixed, canceled");
    // Editing shows no stored secret and keeps it when left empty.
    await card.getByRole("button", { name: "Edit Team hook" }).click();
    const edit = page.getByRole("form", { name: "Edit notification Team hook" });
    expect(await edit.getByLabel("URL (write-only)").inputValue()).toBe("");
    expect(await edit.getByLabel("Signing secret (write-only, at least 16 characters)").inputValue()).toBe("");
    await edit.getByLabel("failed").uncheck();
    await edit.getByLabel("fixed").uncheck();
    await edit.getByRole("button", { name: "Save notification" }).click();
    await page.locator(".notification", { hasText: "on canceled" }).waitFor();
    expect(await page.content()).not.toContain(SIGNING_SECRET);
    await checkA11y("notifications");
  }, 30_000);

  test("a schedule: the API's error beside the cron field, created, edited; its build names it; the build page names the definition (API, then roost.yaml at a commit)", async () => {
    // The first build uses the pipeline as configured through the API.
    builds.push((await ok("POST", `/v1/projects/${projectId}/builds`, { pipeline_id: pipelineId, branch: "main" })).build.id);
    // From now on the repository has a pipeline file defining the same pipeline.
    const fileCommit = commitFiles(
      repo,
      { "roost.yaml": "version: 1\npipelines:\n  android:\n    platforms: [android]\n    commands:\n      build: [echo from the file]\n" },
      "pipeline file",
    );
    builds.push((await ok("POST", `/v1/projects/${projectId}/builds`, { pipeline_id: pipelineId, branch: "main" })).build.id);

    await tab("Schedules");
    await page.getByRole("button", { name: "New schedule for android" }).click();
    const form = page.getByRole("form", { name: "New schedule of android" });
    await form.getByLabel("Cron expression").fill("every day");
    await form.getByLabel("Time zone").fill("UTC");
    await form.getByRole("button", { name: "Create schedule" }).click();
    expect(await form.locator("#f-cron-error").textContent()).toBe(
      "must have five fields: minute hour day-of-month month day-of-week (or a nickname such as @daily)",
    );
    await form.getByLabel("Cron expression").fill("*/15 * * * *");
    await form.getByLabel("Time zone").fill("Mars/Olympus");
    await form.getByRole("button", { name: "Create schedule" }).click();
    expect(await form.locator("#f-timezone-error").textContent()).toBe("must be an IANA time zone name, e.g. UTC or Europe/Berlin");
    await form.getByLabel("Time zone").fill("UTC");
    await form.getByRole("button", { name: "Create schedule" }).click();
    const item = page.locator(".schedule", { hasText: "*/15 * * * *" });
    await item.waitFor();
    await page.getByRole("button", { name: "Edit schedule */15 * * * * on main" }).click();
    const edit = page.getByRole("form", { name: "Edit schedule of android" });
    await edit.getByLabel("Cron expression").fill("0 * * * *");
    await edit.getByLabel("Time zone").fill("Europe/Berlin");
    await edit.getByRole("button", { name: "Save schedule" }).click();
    const edited = page.locator(".schedule", { hasText: "0 * * * * (Europe/Berlin) on main" });
    await edited.waitFor();
    const schedule = (await ok("GET", `/v1/pipelines/${pipelineId}/schedules`)).schedules[0];
    expect(schedule).toMatchObject({ cron: "0 * * * *", timezone: "Europe/Berlin", branch: "main", enabled: true });
    expect(await edited.locator("time").getAttribute("datetime")).toBe(new Date(schedule.next_run_at * 1000).toISOString());
    await checkA11y("schedules");

    // The slot falls due: the scheduler builds, and the build page names the schedule and the file.
    t.clock.set(schedule.next_run_at + 5);
    await runDueSchedules(t.ctx);
    const scheduled = (await ok("GET", `/v1/projects/${projectId}/builds?trigger_type=schedule`)).builds;
    expect(scheduled.length).toBe(1);
    builds.push(scheduled[0].id);
    await page.reload();
    await page.locator(".schedule", { hasText: "last run" }).getByRole("link", { name: "the build" }).click();
    await page.getByRole("heading", { name: "Build #3" }).waitFor();
    // The schedule's own settings, once loaded.
    await page.locator(".build-schedule", { hasText: "0 * * * * (Europe/Berlin) on main" }).waitFor();
    expect(await page.locator(".build-schedule").textContent()).toBe("0 * * * * (Europe/Berlin) on main");
    // The manual build after the file was committed was defined by it; the first by the API.
    await page.goto(`${base}/projects/${projectId}/builds/${builds[1]}`);
    await page.getByRole("heading", { name: "Build #2" }).waitFor();
    expect(await page.locator(".definition-source").textContent()).toBe(`pipeline file roost.yaml at commit ${fileCommit.slice(0, 8)}`);
    await page.goto(`${base}/projects/${projectId}/builds/${builds[0]}`);
    await page.getByRole("heading", { name: "Build #1" }).waitFor();
    expect(await page.locator(".definition-source").textContent()).toBe("the pipeline as configured in Roost (API)");
    expect(await page.locator(".build-schedule").count()).toBe(0);
  }, 60_000);

  test("the notification delivers when builds are canceled; its deliveries and health are shown", async () => {
    for (const id of builds) await ok("POST", `/v1/builds/${id}/cancel`);
    await dispatchNotifications(t.ctx, base);
    expect(received.length).toBe(3);
    expect(received.every((r) => r.verified && r.event === "build.canceled")).toBe(true);
    await page.goto(`${base}/projects/${projectId}?tab=notifications`);
    const card = page.locator(".notification", { hasText: "Team hook" });
    await card.locator(".badge-succeeded").waitFor();
    expect(await card.textContent()).toContain("delivered");
    await card.getByText("Recent deliveries of Team hook").click();
    await card.locator(".notification-deliveries li").nth(2).waitFor();
    expect(await card.locator(".notification-deliveries li").count()).toBe(3);
    expect(await card.locator(".notification-deliveries li").first().textContent()).toContain("delivered · build canceled");
    await checkA11y("notifications with deliveries");
  }, 30_000);

  test("badges made public with their Markdown; retention set; the build page says what retention removed", async () => {
    const badge = `/v1/pipelines/${pipelineId}/badge.svg`;
    expect((await fetch(base + badge)).status).not.toBe(200);
    await tab("Badges and retention");
    await page.getByLabel("Public: anyone may read the badges").check();
    await expect(page.getByLabel("Public: anyone may read the badges").isChecked()).resolves.toBe(true);
    await page.waitForFunction(async (url) => (await fetch(url, { credentials: "omit" })).status === 200, base + badge);
    const anonymous = await fetch(base + badge);
    expect(anonymous.status).toBe(200);
    expect(anonymous.headers.get("content-type")).toContain("image/svg+xml");
    expect(await page.getByLabel("Markdown for android").inputValue()).toBe(`[![android](${base}${badge})](${base}/projects/${projectId})`);
    // The preview loaded: the image has pixels (a failed load has none).
    await page.waitForFunction("[...document.querySelectorAll(\"img[alt='Status of android']\")].some((img) => img.complete && img.naturalWidth > 0)");

    const form = page.getByRole("form", { name: "Retention" });
    await form.getByLabel("Keep logs (days)").fill("-1");
    await form.getByRole("button", { name: "Save retention" }).click();
    expect(await form.locator("#f-log_retention_days-error").textContent()).toBe("must be at least 0");
    await form.getByLabel("Keep logs (days)").fill("");
    await form.getByLabel("Keep artifacts (days)").fill("0");
    await form.getByLabel("Keep the logs and artifacts of the newest builds (per pipeline)").fill("1");
    await form.getByRole("button", { name: "Save retention" }).click();
    await form.getByText("Saved; the next background pass applies it.").waitFor();
    expect(await ok("GET", `/v1/projects/${projectId}/retention`)).toMatchObject({
      log_retention_days: null,
      artifact_retention_days: 0,
      keep_builds: 1,
      effective: { log_retention_days: 90, artifact_retention_days: 0, keep_builds: 1 },
    });
    const facts = await page.locator(".retention-effective").textContent();
    expect(facts).toContain("90 days (instance default)");
    expect(facts).toContain("no limit (this project; the instance default is 90 days)");
    expect(facts).toContain("the newest 1 (this project; the instance default is no limit)");
    await checkA11y("badges and retention");

    // Past the hour's grace, a retention pass removes the older builds' logs and artifacts.
    t.clock.advance(2 * 3600);
    await enforceRetention(t.ctx);
    const removed = (await ok("GET", `/v1/builds/${builds[0]}`)).build;
    expect(removed.logs_deleted_at).not.toBeNull();
    await page.goto(`${base}/projects/${projectId}/builds/${builds[0]}`);
    await page.getByRole("heading", { name: "Build #1" }).waitFor();
    // Formatted as the page formats every date (web/format.ts dateTime).
    const when = await page.evaluate(
      (s) => new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" }).format(new Date(s * 1000)),
      removed.logs_deleted_at as number,
    );
    await page.getByText(`Log removed by retention on ${when}.`).waitFor();
    await page.getByText(`Artifacts removed by retention on ${when}.`).waitFor();
    await checkA11y("build page after retention");
    await page.goto(`${base}/projects/${projectId}/builds/${builds[2]}`);
    await page.getByRole("heading", { name: "Build #3" }).waitFor();
    expect(await page.getByText(/removed by retention/).count()).toBe(0);
  }, 30_000);

  test("a developer sees schedules, badges and retention without controls; a forged change is refused", async () => {
    const invited = await ok("POST", "/v1/users", { email: DEV, role: "developer" });
    await ok("PUT", `/v1/projects/${projectId}/members/${invited.user.id}`, { role: "developer" });
    const devContext = await signedInContext(tb.browser, base, DEV, { t, viewport: { width: 390, height: 844 } });
    const dev = await newPage(devContext, errors);
    await dev.goto(`${base}/projects/${projectId}`);
    await dev.getByText("your role: developer").waitFor();
    const sections = await dev.getByRole("navigation", { name: "Project sections" }).getByRole("link").allTextContents();
    expect(sections).toEqual(["Builds", "Pipelines", "Deployments", "Schedules", "Badges and retention"]);
    await tab("Schedules", dev);
    await dev.locator(".schedule", { hasText: "0 * * * *" }).waitFor();
    expect(await dev.getByRole("button", { name: /schedule/i }).count()).toBe(0);
    await checkA11y("schedules (developer)", dev);
    await tab("Badges and retention", dev);
    await dev.getByText("The badges are public: anyone may read them.").waitFor();
    await dev.locator(".retention-effective").waitFor();
    expect(await dev.getByRole("checkbox").count()).toBe(0);
    expect(await dev.getByRole("form", { name: "Retention" }).count()).toBe(0);
    expect(await dev.getByLabel("Markdown for android").inputValue()).toContain("badge.svg");
    await checkA11y("badges and retention (developer)", dev);
    // A page the tabs do not offer shows nothing of it.
    await dev.goto(`${base}/projects/${projectId}?tab=variables`);
    await dev.getByText("your role: developer").waitFor();
    expect(await dev.getByRole("form", { name: "Add or replace a variable" }).count()).toBe(0);

    const forbidden = { code: "forbidden", message: "This needs the maintainer role on the project; yours is developer." };
    expect(await api("PUT", `/v1/projects/${projectId}/variables/EVIL`, { value: "x" }, devContext)).toEqual({ status: 403, body: forbidden });
    expect(await api("GET", `/v1/projects/${projectId}/variables`, undefined, devContext)).toEqual({ status: 403, body: forbidden });
    expect(await api("POST", `/v1/pipelines/${pipelineId}/schedules`, { cron: "* * * * *" }, devContext)).toEqual({ status: 403, body: forbidden });
    expect(await api("PUT", `/v1/projects/${projectId}/badges`, { public: false }, devContext)).toEqual({ status: 403, body: forbidden });
    expect(await api("PUT", `/v1/projects/${projectId}/retention`, { keep_builds: 0 }, devContext)).toEqual({ status: 403, body: forbidden });
    expect(await api("GET", `/v1/projects/${projectId}/notifications`, undefined, devContext)).toEqual({ status: 403, body: forbidden });
    expect((await ok("GET", `/v1/projects/${projectId}/badges`)).public).toBe(true);
    expect((await ok("GET", `/v1/projects/${projectId}/retention`)).keep_builds).toBe(1);
    await devContext.close();
  }, 40_000);

  test("no serious or critical accessibility violation, no script error, no CSP violation", () => {
    expect(a11y).toEqual(Object.fromEntries(Object.keys(a11y).map((k) => [k, []])));
    expect(Object.keys(a11y).length).toBeGreaterThanOrEqual(8);
    expect(errors).toEqual([]);
  });
});
