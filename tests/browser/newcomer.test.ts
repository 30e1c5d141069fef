// What trips a newcomer (Roost issue 18), in a real Chromium as the owner: the Pipelines tab says
// where each pipeline comes from (roost.yaml at the default branch's head, with the line, read-only;
// or configured in Roost), shows the file's problems and the last one a delivery found, and offers
// no edit form a file overrides; Local Only switches to External Access (and back) under
// Administration → Sign-in, with the API's refusal shown; each list has its own status words
// (pipelines enabled, users active, tokens active/revoked, runners revoked), not the runners'
// "online"; an empty required field says "name is required"; the skip link moves focus to the
// main region. axe-core on every page visited.
//
// The daemon runs in this process (tests/helpers/app.ts) behind Bun.serve, with a plain git
// integration on a local repository (ROOST_GIT_ALLOW_LOCAL_REMOTES) and its signed push webhook.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { commitFiles, git } from "../helpers/git.ts";
import { axeViolations, browserCall, createGitProject, newPage, serveToBrowser, signedInContext, type ServedApp, type TestBrowser } from "./browser.ts";

const work = mkdtempSync(join(tmpdir(), "roost-browser-newcomer-"));
const repo = join(work, "app");
const OWNER = "owner@example.test";
const WEBHOOK_SECRET = "a-webhook-secret-for-the-git-push";
// android is on line 3, nightly on line 7.
const ROOST_YAML = `version: 1
pipelines:
  android:
    platforms: [android]
    commands:
      build: [flutter test]
  nightly:
    triggers:
      events: [push]
    platforms: [android]
`;

let t: TestApp;
let served: ServedApp;
let base = "";
let tb: TestBrowser;
let context: BrowserContext;
let page: Page;
let projectId = "";
const errors: string[] = [];
const dialogs: string[] = [];
const a11y: Record<string, unknown[]> = {};

/** roost.yaml committed with `content` (null: removed); the commit. */
const commitFile = (content: string | null, message: string) => commitFiles(repo, { "roost.yaml": content }, message);

/** A push as a post-receive hook tells it (docs/any-git.md "The push webhook"), signed with the integration's secret. */
async function push(sha: string): Promise<void> {
  const body = JSON.stringify({ project_id: projectId, ref: "refs/heads/main", before: "0".repeat(40), after: sha });
  const signature = "sha256=" + createHmac("sha256", WEBHOOK_SECRET).update(body).digest("hex");
  const res = await fetch(`${base}/v1/webhooks/git`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-roost-signature-256": signature },
    body,
  });
  if (res.status !== 200) throw new Error(`push: ${res.status} ${await res.text()}`);
}

/** The API as a signed-in browser calls it: its session cookie, plus the CSRF header. */
const ok = (method: string, path: string, data?: unknown) => browserCall(context, base, method, path, data);

async function checkA11y(name: string): Promise<void> {
  a11y[name] = await axeViolations(page);
}

const card = (name: string) => page.locator(".project-card", { has: page.locator("strong", { hasText: new RegExp(`^${name}$`) }) });

beforeAll(async () => {
  commitFiles(repo, { "README.md": "# app\n", "roost.yaml": ROOST_YAML }, "pipelines in roost.yaml");
  t = await createTestApp({ ROOST_GIT_ALLOW_LOCAL_REMOTES: "true" });
  t.clock.set(Math.floor(Date.now() / 1000));
  served = await serveToBrowser(t);
  ({ base, tb } = served);
  // Local Only first run: the first loopback sign-in creates the owner and sets the session cookie.
  context = await signedInContext(tb.browser, base, OWNER);
  page = await newPage(context, errors);
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    void (d.type() === "confirm" ? d.accept() : d.dismiss());
  });
  projectId = await createGitProject(ok, repo, WEBHOOK_SECRET);
  // Configured through the API before the file existed: android (the file defines it too) and legacy (it does not).
  await ok("POST", `/v1/projects/${projectId}/pipelines`, {
    name: "android",
    trigger_config: { branches: ["**"], events: ["push"] },
    execution_config: { commands: { build: ["echo configured in Roost"] } },
  });
  await ok("POST", `/v1/projects/${projectId}/pipelines`, { name: "legacy" });
}, 60_000);

afterAll(async () => {
  await served?.close();
  t?.close();
  rmSync(work, { recursive: true, force: true });
});

describe("what trips a newcomer, in the web app", () => {
  test("the skip link moves focus to the main region", async () => {
    await page.goto(`${base}/`);
    await page.getByRole("heading", { name: "Dashboard" }).waitFor();
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement?.textContent?.trim()")).toBe("Skip to content");
    await page.keyboard.press("Enter");
    expect(await page.evaluate("document.activeElement?.id")).toBe("main");
  });

  test("the Pipelines tab says where each pipeline comes from; the file's pipelines are read-only, with their line", async () => {
    const head = git(repo, "rev-parse", "HEAD");
    await page.goto(`${base}/projects/${projectId}?tab=pipelines`);
    await page.getByText(`roost.yaml on main at ${head.slice(0, 12)} defines android, nightly.`, { exact: false }).waitFor();
    // android: the file decides, so its card shows the file's definition and no edit form.
    const android = card("android");
    expect(await android.locator(".origin").textContent()).toBe(`From roost.yaml, line 3 on main at ${head.slice(0, 12)} (read-only here)`);
    expect(await android.textContent()).toContain("push, pull_request on main");
    expect(await android.getByRole("button", { name: "Edit android" }).count()).toBe(0);
    expect(await android.getByRole("button", { name: "Delete android" }).count()).toBe(0);
    await android.getByText("What roost.yaml says").click();
    expect(await android.locator("dl").textContent()).toContain("build: flutter test");
    // legacy: configured in Roost, but the file exists and does not define it.
    const legacy = card("legacy");
    expect(await legacy.locator(".origin").textContent()).toBe(
      "Not in roost.yaml on main: it builds nothing from pushes while the file exists. Add it to the file, or delete it.",
    );
    expect(await legacy.getByRole("button", { name: "Edit legacy" }).count()).toBe(0);
    expect(await legacy.getByRole("button", { name: "Delete legacy" }).count()).toBe(1);
    // nightly: in the file, not yet in Roost.
    expect(await card("nightly").locator(".origin").textContent()).toBe(
      `From roost.yaml, line 7 on main at ${head.slice(0, 12)} — not in Roost yet: the next push to the repository adds it.`,
    );
    // Each pipeline's status is its own word, not the runners' "online".
    expect(await android.locator(".badge").textContent()).toBe("✓ enabled");
    await android.getByRole("button", { name: "Disable android" }).click();
    await android.locator(".badge-disabled").waitFor();
    expect(await android.locator(".badge").textContent()).toBe("○ disabled");
    expect(await page.locator("main .badge-online, main .badge-offline").count()).toBe(0);
    await checkA11y("pipelines from roost.yaml");
  }, 30_000);

  test("an invalid file: its problems with their lines, and the last file error a push found", async () => {
    const broken = commitFile(ROOST_YAML.replace("platforms: [android]\n    commands", "platforms: [linux]\n    commands"), "a platform Roost does not build");
    await push(broken);
    await page.goto(`${base}/projects/${projectId}?tab=pipelines`);
    const problem = "line 4, column 17: pipelines.android.platforms.0: must be one of android, ios or macos";
    const invalid = page.locator(".notice-error", { hasText: `roost.yaml on main at ${broken.slice(0, 12)} is invalid` });
    await invalid.waitFor();
    expect(await invalid.locator("li").allTextContents()).toEqual([problem]);
    const last = page.locator(".notice-warning", { hasText: "Last pipeline file error" });
    expect(await last.locator(".file-error").textContent()).toBe(`roost.yaml at ${broken.slice(0, 12)} is invalid: ${problem}`);
    expect(await last.textContent()).toContain(`commit ${broken.slice(0, 12)}`);
    expect(await card("android").locator(".origin").textContent()).toBe("roost.yaml on main is invalid: nothing builds until it is fixed.");
    expect(await card("android").getByRole("button", { name: "Edit android" }).count()).toBe(0);
    await checkA11y("pipelines with an invalid roost.yaml");
  }, 30_000);

  test("without the file, the pipelines are configured in Roost and the Edit form is back", async () => {
    commitFile(null, "no pipeline file");
    await page.goto(`${base}/projects/${projectId}?tab=pipelines`);
    await page.locator(".notice", { hasText: "No roost.yaml on main" }).waitFor();
    expect(await card("android").locator(".origin").textContent()).toBe("Configured in Roost (no roost.yaml on main)");
    expect(await card("android").textContent()).toContain("push on **");
    await card("android").getByRole("button", { name: "Edit android" }).click();
    await page.getByRole("form", { name: "Edit pipeline android" }).waitFor();
  }, 30_000);

  test("an empty required field says what is missing, in words", async () => {
    await page.goto(`${base}/admin?tab=integrations`);
    const connect = page.getByRole("form", { name: "Connect a source host" });
    await connect.getByRole("button", { name: "Connect" }).click();
    expect(await connect.locator("#f-name-error").textContent()).toBe("name is required");
    await checkA11y("integrations with a field error");
  });

  test("users, API tokens and runners each show their own status", async () => {
    await page.goto(`${base}/admin?tab=users`);
    const ownerRow = page.locator("tr", { has: page.getByRole("cell", { name: OWNER, exact: true }) });
    expect(await ownerRow.locator(".badge").textContent()).toBe("✓ active");
    await page.goto(`${base}/account`);
    await page.getByLabel("Name").fill("ci");
    await page.getByRole("button", { name: "Create token" }).click();
    const tokenRow = page.locator("tr", { has: page.getByRole("cell", { name: "ci", exact: true }) });
    await tokenRow.locator(".badge-active").waitFor();
    await tokenRow.getByRole("button", { name: "Revoke ci" }).click();
    await tokenRow.locator(".badge-revoked").waitFor();
    expect(await tokenRow.locator(".badge").textContent()).toBe("⊘ revoked");
    await checkA11y("account");
    const runner = (await ok("POST", "/v1/runners", { name: "old-mac" })).runner;
    await ok("DELETE", `/v1/runners/${runner.id}`);
    await page.goto(`${base}/runners`);
    const runnerRow = page.locator("tr", { hasText: "old-mac" });
    expect(await runnerRow.locator(".badge").textContent()).toBe("⊘ revoked");
  });

  test("Local Only switches to External Access and back under Administration → Sign-in; a refusal is shown", async () => {
    await page.goto(`${base}/admin?tab=sign-in`);
    const mode = page.getByRole("form", { name: "How people reach Roost" });
    expect(await mode.textContent()).toContain("Now: Local Only");
    // The trusted proxy is not configured yet: the API refuses, and nothing changes.
    await mode.getByLabel("a trusted proxy", { exact: false }).check();
    await mode.getByRole("button", { name: "Switch to External Access" }).click();
    await mode.locator(".notice-error").waitFor();
    expect(await mode.locator(".notice-error").textContent()).toBe(
      "Configure the trusted proxy first: the Trusted proxy form under Administration → Sign-in, or PUT /v1/settings/trusted-proxy.",
    );
    expect(dialogs.at(-1)).toStartWith("Switch to External Access through the trusted proxy?");
    expect((await ok("GET", "/v1/setup/status")).runtime_mode).toBe("local");
    await checkA11y("sign-in settings with a refusal");
    // Configured, then switched: the answer is shown and the page says so.
    const proxy = page.getByRole("form", { name: "Trusted proxy" });
    await proxy.getByLabel("Proxy addresses (IPs or CIDRs)").fill("10.0.0.5");
    await proxy.getByRole("button", { name: "Save trusted proxy settings" }).click();
    await page.getByText("Trusted proxy settings saved.").waitFor();
    await mode.getByRole("button", { name: "Switch to External Access" }).click();
    await mode.getByText("Roost is in External Access now: people sign in through the trusted proxy.").waitFor();
    expect(await mode.textContent()).toContain("Now: External Access, signing in through the trusted proxy.");
    expect(await ok("GET", "/v1/setup/status")).toMatchObject({ runtime_mode: "remote", remote_auth_mode: "trusted_proxy" });
    // And back.
    await mode.getByRole("button", { name: "Switch to Local Only" }).click();
    await mode.getByText("Roost is Local Only now.").waitFor();
    expect((await ok("GET", "/v1/setup/status")).runtime_mode).toBe("local");
  }, 30_000);

  test("no serious or critical accessibility violation, no script error, no CSP violation", () => {
    expect(a11y).toEqual(Object.fromEntries(Object.keys(a11y).map((k) => [k, []])));
    expect(Object.keys(a11y).length).toBeGreaterThanOrEqual(5);
    expect(errors).toEqual([]);
  });
});
