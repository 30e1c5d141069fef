// The build page when the stream's credential ends, in a real Chromium (docs/api.md "Streams end
// with their credential"): the daemon ends a live log with `event: revoked` within seconds of the
// user losing the project or the session ending. The page says why and stops asking for new
// streams (each would be refused again), and an ended session goes back to sign-in.
//
// The daemon runs in this process (tests/helpers/app.ts) behind Bun.serve, so the test can mint
// the one-time capability a second user signs in with, as `roost login` does on the host.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { commitFiles } from "../helpers/git.ts";
import { browserCall, createGitProject, newPage, serveToBrowser, signedInContext, type ServedApp, type TestBrowser } from "./browser.ts";

const work = mkdtempSync(join(tmpdir(), "roost-browser-revoked-"));
const repo = join(work, "app");
const OWNER = "owner@example.test";
const DEV = "dev@example.test";

let t: TestApp;
let served: ServedApp;
let base = "";
let tb: TestBrowser;
let owner: BrowserContext;
let projectId = "";
let buildId = "";
let devId = "";
const errors: string[] = [];

/** The API as `ctx`'s signed-in browser calls it. */
const ok = (ctx: BrowserContext, method: string, path: string, data?: unknown) => browserCall(ctx, base, method, path, data);

/** The log heading's "● live" badge, shown while the stream is open. */
const liveBadge = (page: Page) => page.getByRole("heading", { name: "Log" }).locator(".badge-running");

/** A developer of the project, signed in in a browser context of their own, on the queued build's page. */
async function developerOnBuildPage(): Promise<{ ctx: BrowserContext; page: Page; streamTokens: () => number }> {
  const ctx = await signedInContext(tb.browser, base, DEV, { t });
  await ok(owner, "PUT", `/v1/projects/${projectId}/members/${devId}`, { role: "developer" });
  const page = await newPage(ctx, errors);
  let tokens = 0;
  page.on("request", (r) => void (r.url().endsWith("/stream-token") && tokens++));
  await page.goto(`${base}/projects/${projectId}/builds/${buildId}`);
  await liveBadge(page).waitFor({ timeout: 15_000 });
  return { ctx, page, streamTokens: () => tokens };
}

beforeAll(async () => {
  commitFiles(repo, { "README.md": "# app\n" }, "first");
  t = await createTestApp({ ROOST_GIT_ALLOW_LOCAL_REMOTES: "true" });
  t.clock.set(Math.floor(Date.now() / 1000));
  served = await serveToBrowser(t, { idleTimeout: 30 });
  ({ base, tb } = served);
  owner = await signedInContext(tb.browser, base, OWNER);
  projectId = await createGitProject((method, path, data) => ok(owner, method, path, data), repo);
  // No runner has this label: the build stays queued, so its page follows a live stream.
  const pipeline = (await ok(owner, "POST", `/v1/projects/${projectId}/pipelines`, { name: "parked", execution_config: { runner_labels: ["nowhere"] } }))
    .pipeline;
  buildId = (await ok(owner, "POST", `/v1/projects/${projectId}/builds`, { pipeline_id: pipeline.id })).build.id;
  devId = (await ok(owner, "POST", "/v1/users", { email: DEV, role: "developer" })).user.id;
}, 60_000);

afterAll(async () => {
  await served?.close();
  t?.close();
  rmSync(work, { recursive: true, force: true });
});

describe("a live log whose credential ends", () => {
  test("removed from the project: the page says the live log stopped and asks for no new stream", async () => {
    const { ctx, page, streamTokens } = await developerOnBuildPage();
    const before = streamTokens();
    await ok(owner, "DELETE", `/v1/projects/${projectId}/members/${devId}`);
    const notice = page.getByText(/The live log stopped:/);
    await notice.waitFor({ timeout: 10_000 });
    if (process.env.ROOST_SCREENSHOTS_DIR) await page.screenshot({ path: join(process.env.ROOST_SCREENSHOTS_DIR, "log-revoked.png") });
    expect(await liveBadge(page).count()).toBe(0);
    await page.waitForTimeout(3_000);
    expect(streamTokens()).toBe(before);
    await ctx.close();
  }, 60_000);

  test("signed out elsewhere: the page goes back to sign-in, saying the session ended", async () => {
    const { ctx, page } = await developerOnBuildPage();
    // The same session signs out from another tab (its cookie, the API's logout).
    await ok(ctx, "POST", "/v1/auth/logout");
    await page.getByText("Your session ended. Sign in again").waitFor({ timeout: 10_000 });
    await ctx.close();
    expect(errors.filter((e) => !/status of (401|403)/.test(e))).toEqual([]);
  }, 60_000);
});
