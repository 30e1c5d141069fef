// The browser of the web app's tests: Debian's chromium (installed by scripts/ensure-test-tools),
// driven by playwright-core. The flags keep it off the network (this machine has none: without
// them Chromium waits on connections to Google's services); playwright-core gives every launch a
// fresh temporary profile (its own --user-data-dir) and removes it on close.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { loginCapability, type TestApp } from "../helpers/app.ts";

export const CHROMIUM = "/usr/bin/chromium";

export interface TestBrowser {
  browser: Browser;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}

export interface ServedApp {
  base: string;
  tb: TestBrowser;
  /** The browser closed and the server stopped (the app is the caller's). */
  close(): Promise<void>;
}

/** The in-process app (tests/helpers/app.ts) served on 127.0.0.1 as the daemon serves it, each request with its peer's address, and a browser launched to visit it at `base`. */
export async function serveToBrowser(t: TestApp, options: { idleTimeout?: number } = {}): Promise<ServedApp> {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    ...options,
    fetch: (request, srv) => t.app.fetch(request, srv.requestIP(request)?.address ?? null),
  });
  const tb = await launchBrowser();
  return {
    base: `http://127.0.0.1:${server.port}`,
    tb,
    async close() {
      await tb.close();
      server.stop(true);
    },
  };
}

/**
 * A browser context signed in as `email` at `base` (a desktop viewport unless `options` say
 * otherwise): the first loopback sign-in makes the owner; with `t`, a one-time login capability
 * minted on the host (as `roost login` does) signs in anyone else.
 */
export async function signedInContext(
  browser: Browser,
  base: string,
  email: string,
  options: { t?: TestApp; viewport?: { width: number; height: number }; colorScheme?: "dark" | "light"; acceptDownloads?: boolean } = {},
): Promise<BrowserContext> {
  const { t, viewport = { width: 1280, height: 900 }, ...contextOptions } = options;
  const context = await browser.newContext({ viewport, ...contextOptions });
  const data = t ? { email, recovery_capability: await loginCapability(t) } : { email };
  const login = await context.request.post(`${base}/v1/auth/local/login`, { data });
  if (login.status() !== 200) throw new Error(`${email} could not sign in: ${login.status()} ${await login.text()}`);
  return context;
}

/** The API as a signed-in browser calls it (its session cookie, plus the CSRF header): the JSON answered, or an error naming the refusal. */
export async function browserCall(context: BrowserContext, base: string, method: string, path: string, data?: unknown): Promise<any> {
  const res = await context.request.fetch(base + path, { method, headers: { "x-roost-csrf": "1" }, data });
  if (res.status() >= 300) throw new Error(`${method} ${path}: ${res.status()} ${await res.text()}`);
  return res.json().catch(() => null);
}

/** A plain git integration on the local repository `repo` (the daemon allows local remotes) and a project on it, made through `call`; the project's id. */
export async function createGitProject(
  call: (method: string, path: string, data?: unknown) => Promise<any>,
  repo: string,
  webhookSecret?: string,
): Promise<string> {
  await call("POST", "/v1/integrations", { provider: "git", name: "app", url: repo, ...(webhookSecret ? { webhook_secret: webhookSecret } : {}) });
  const repository = (await call("GET", "/v1/integration-repositories")).repositories[0].id;
  return (await call("POST", "/v1/projects", { repository_id: repository })).project.id;
}

/** Waits until `ready` holds (a string waitForFunction would be refused by the app's CSP). */
export async function until(what: string, ready: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/** A page that fails the test on any script error or CSP violation it reports. */
export async function newPage(context: BrowserContext, errors: string[]): Promise<Page> {
  const page = await context.newPage();
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !/Failed to load resource: the server responded with a status of (400|401|403|404|409)/.test(message.text()))
      errors.push(`console: ${message.text()}`);
  });
  return page;
}

/** Runs axe-core (injected from node_modules) in the page; the serious and critical violations. */
export async function axeViolations(page: Page): Promise<Array<{ id: string; impact: string; help: string; nodes: string[] }>> {
  const source = await Bun.file(join(import.meta.dir, "../../node_modules/axe-core/axe.min.js")).text();
  // Evaluated through the DevTools protocol, which the page's CSP does not govern (an injected <script> would be refused, as it should).
  await page.evaluate(source);
  const result = (await page.evaluate(async () => {
    // @ts-expect-error axe is the global the injected script defines
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v: { id: string; impact: string; help: string; nodes: Array<{ target: string[] }> }) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => n.target.join(" ")),
    }));
  })) as Array<{ id: string; impact: string; help: string; nodes: string[] }>;
  return result.filter((v) => v.impact === "serious" || v.impact === "critical");
}

/**
 * Where a file's screenshots go: ROOST_SCREENSHOTS_DIR when set (`npm run screenshots` points it
 * at docs/screenshots), else a temporary directory that closeScreenshotsWorld removes.
 */
export function screenshotsDir(name: string): string {
  return process.env.ROOST_SCREENSHOTS_DIR ?? mkdtempSync(join(tmpdir(), `roost-${name}-shots-`));
}

/** After a file's tests (its own afterAll): the browser and server closed, the fixture stopped and a temporary screenshots directory removed. */
export async function closeScreenshotsWorld(shots: string, served: ServedApp | undefined, fixture: { stop(): Promise<void> } | undefined): Promise<void> {
  await served?.close();
  await fixture?.stop();
  if (!process.env.ROOST_SCREENSHOTS_DIR) rmSync(shots, { recursive: true, force: true });
}
