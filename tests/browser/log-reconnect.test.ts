// The build page's live log survives a daemon restart, in a real Chromium: a real `roost runner`
// (with the repository's flutter stand-in) runs a build that writes a line every quarter second; while the page follows it, the daemon is
// stopped (SIGTERM) and started again on the same data directory and port. The page reconnects
// by itself (EventSource with Last-Event-ID, or a new stream token from the last line it holds)
// and, once the build has finished, shows every line of the API's log exactly once, in order.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import type { BrowserContext, Page } from "playwright-core";
import { BUN, REPO_ROOT, ROOST, http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { freePort } from "../support/nginx.ts";
import { launchBrowser, until, type TestBrowser } from "./browser.ts";

const work = mkdtempSync(join(tmpdir(), "roost-browser-restart-"));
const dataDir = join(work, "data");
const repo = join(work, "app");
const TICKS = 40;

let port = 0;
let daemon: Daemon;
let tb: TestBrowser;
let context: BrowserContext;
let page: Page;
let runner: Subprocess | undefined;
let token = "";
let projectId = "";
let pipelineId = "";
const errors: string[] = [];

async function sh(cmd: string, cwd: string): Promise<void> {
  const p = Bun.spawn(["bash", "-c", cmd], { cwd, stdout: "ignore", stderr: "pipe" });
  if ((await p.exited) !== 0) throw new Error(`${cmd}: ${await new Response(p.stderr).text()}`);
}

const start = () =>
  startDaemon({ dataDir, cleanup: false, listen: `127.0.0.1:${port}`, env: { ROOST_GIT_ALLOW_LOCAL_REMOTES: "true", ROOST_RUNNER_HEARTBEAT_SECONDS: "1" } });

async function call(method: string, path: string, body?: unknown): Promise<any> {
  const res = await http(daemon.url, method, path, { token, body });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

beforeAll(async () => {
  mkdirSync(dataDir);
  mkdirSync(repo);
  await sh("git init -q -b main && echo '# app' > README.md && git add . && git -c user.email=ci@example.test -c user.name=CI commit -q -m first", repo);
  port = await freePort();
  daemon = await start();
  tb = await launchBrowser();
  context = await tb.browser.newContext({ viewport: { width: 1280, height: 900 } });
  // Signed in as the browser is: the login's answer sets the session cookie in this context.
  const login = await context.request.post(`${daemon.url}/v1/auth/local/login`, { data: { email: "owner@example.test" } });
  token = ((await login.json()) as { session_token: string }).session_token;
  await call("POST", "/v1/integrations", { provider: "git", name: "app", url: repo });
  const repository = (await call("GET", "/v1/integration-repositories")).repositories[0].id;
  projectId = (await call("POST", "/v1/projects", { repository_id: repository })).project.id;
  const ticks = `for i in $(seq 1 ${TICKS}); do echo "tick $i"; sleep 0.25; done`;
  pipelineId = (
    await call("POST", `/v1/projects/${projectId}/pipelines`, { name: "ticks", execution_config: { commands: { pre_build: [ticks] }, artifact_patterns: [] } })
  ).pipeline.id;
  const registered = await call("POST", "/v1/runners", { name: "restart-e2e" });
  runner = Bun.spawn([BUN, ROOST, "runner", "--unsafe-allow-same-user"], {
    cwd: REPO_ROOT,
    env: {
      PATH: `${join(REPO_ROOT, "scripts/flutter-stand-in")}:${process.env.PATH}`,
      HOME: work,
      ROOST_URL: daemon.url,
      ROOST_RUNNER_ID: registered.runner.id,
      ROOST_RUNNER_TOKEN: registered.token,
      ROOST_RUNNER_WORKDIR: join(work, "runner-work"),
      ROOST_RUNNER_GRACE_SECONDS: "1",
    },
    stdout: "ignore",
    stderr: "ignore",
  });
  page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    // While the daemon is down or starting again (503 not_ready until it is ready) the browser
    // reports the refused or refused-for-now requests; nothing else may fail.
    if (
      message.type() === "error" &&
      !/ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE|ERR_INCOMPLETE_CHUNKED_ENCODING|status of (401|404|502|503)/.test(message.text())
    )
      errors.push(`console: ${message.text()}`);
  });
}, 60_000);

afterAll(async () => {
  runner?.kill("SIGKILL");
  await runner?.exited;
  await tb?.close();
  await daemon?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("the live log across a daemon restart", () => {
  test("the page reconnects after the daemon restarts on the same data dir and port, and shows every line once", async () => {
    const build = (await call("POST", `/v1/projects/${projectId}/builds`, { pipeline_id: pipelineId })).build;
    await page.goto(`${daemon.url}/projects/${projectId}/builds/${build.id}`);
    await page.getByRole("heading", { name: `Build #${build.build_number}` }).waitFor();
    await page.locator(".log .log-line .text", { hasText: /^tick 5$/ }).waitFor({ timeout: 30_000 });
    expect(await page.locator(".log").getAttribute("data-complete")).toBe("false");

    // The daemon goes away mid-build and comes back on the same port with the same data.
    const seqBefore = Number(await page.locator(".log").getAttribute("data-last-seq"));
    expect(await daemon.stop()).toBe(0);
    await Bun.sleep(1500);
    daemon = await start();

    // The page follows on: lines written after the restart arrive, then the end.
    await page.locator(".log .log-line .text", { hasText: new RegExp(`^tick ${TICKS}$`) }).waitFor({ timeout: 40_000 });
    await page.locator('.log[data-complete="true"]').waitFor({ timeout: 30_000 });
    await page.locator(".facts .badge-succeeded").waitFor({ timeout: 20_000 });
    expect(Number(await page.locator(".log").getAttribute("data-last-seq"))).toBeGreaterThan(seqBefore);

    // Every line of the API's log, once, in order (a viewport tall enough to render them all).
    const apiLines = (await call("GET", `/v1/builds/${build.id}/logs`)) as Array<{ seq: number; text: string }>;
    expect(apiLines.filter((l) => /^tick \d+$/.test(l.text)).map((l) => l.text)).toEqual(Array.from({ length: TICKS }, (_, i) => `tick ${i + 1}`));
    await page.setViewportSize({ width: 1280, height: 4000 });
    await page.locator(".log").evaluate((el, h) => ((el as unknown as { style: { height: string } }).style.height = `${h}px`), (apiLines.length + 10) * 20);
    // The taller box renders every line once it has laid out again: awaited, not 300 ms.
    const shown = async () => (await page.locator(".log .log-line .ln").allTextContents()).map(Number);
    await until("every line rendered", async () => (await shown()).length >= apiLines.length);
    expect(await shown()).toEqual(apiLines.map((l) => l.seq));
    expect(Number(await page.locator(".log").getAttribute("data-lines"))).toBe(apiLines.length);
    expect(errors).toEqual([]);
  }, 120_000);
});
