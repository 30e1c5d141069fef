// The External Access side of the web app in a real Chromium against real daemons:
// - the first-run wizard with the setup token from the data directory → OIDC → the provider's
//   settings → the owner → finish, then sign-in through the real OpenID Provider the suite uses
//   (tests/support/oidc-provider.mjs: its login and consent pages, then the app's /auth/callback);
// - an expired session: the next request sends the person to sign-in, and back to the page;
// - the wizard → trusted proxy, then sign-in through a real nginx (tests/support/nginx.ts), where
//   the app calls POST /v1/auth/trusted-proxy/login itself and the session cookie works for writes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import type { BrowserContext, Page } from "playwright-core";
import { startDaemon, type Daemon } from "../helpers/daemon.ts";
import { freePort, startNginx, type Nginx } from "../support/nginx.ts";
import { axeViolations, launchBrowser, newPage, type TestBrowser } from "./browser.ts";

const CLIENT_ID = "roost-browser";
const CLIENT_SECRET = "browser-client-secret-" + crypto.randomUUID();
const PROXY_SECRET = "browser-proxy-secret-" + crypto.randomUUID();

let tb: TestBrowser;
const errors: string[] = [];
/** What the OIDC page reported anywhere; its page errors count (Roost's scripts), its console errors only on Roost's pages. */
const providerErrors: string[] = [];
const a11y: Record<string, unknown[]> = {};

async function startProvider(redirectUri: string): Promise<{ issuer: string; proc: Subprocess }> {
  const proc = Bun.spawn(["node", resolve(import.meta.dir, "../support/oidc-provider.mjs"), CLIENT_ID, CLIENT_SECRET, redirectUri], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`oidc-provider exited: ${await new Response(proc.stderr as ReadableStream).text()}`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return { issuer: (JSON.parse(text.split("\n")[0]!) as { issuer: string }).issuer, proc };
}

const setupToken = (daemon: Daemon) => readFileSync(join(daemon.dataDir, "setup-token"), "utf8").trim();

/** The wizard up to the sign-in method: External Access, a wrong token (its error beside the field), the right one. */
async function chooseExternalAccess(page: Page, daemon: Daemon, method: "OpenID Connect provider" | "Trusted reverse proxy (identity header)"): Promise<void> {
  await page.goto(daemon.url + "/");
  await page.getByRole("heading", { name: "Set up Roost" }).waitFor();
  await page.getByLabel(/^External Access/).check();
  await page.getByRole("textbox", { name: "Setup token" }).fill("roost_setup_not-the-token");
  await page.getByLabel(method).check();
  await page.getByRole("button", { name: "Continue" }).click();
  expect(await page.locator("#f-setup_token-error").textContent()).toMatch(/setup token/i);
  await page.getByRole("textbox", { name: "Setup token" }).fill(setupToken(daemon));
  await page.getByRole("button", { name: "Continue" }).click();
  await page.locator('.steps li[aria-current="step"]', { hasText: "Configure it" }).waitFor();
}

/** The owner and the last step, shared by both modes. */
async function ownerAndFinish(page: Page, email: string): Promise<void> {
  await page.locator('.steps li[aria-current="step"]', { hasText: "Owner" }).waitFor();
  await page.getByLabel("Owner's e-mail address").fill(email);
  await page.getByRole("button", { name: "Continue" }).click();
  await page.getByRole("button", { name: "Finish setup" }).click();
  await page.getByRole("heading", { name: "Sign in to Roost" }).waitFor();
}

beforeAll(async () => {
  tb = await launchBrowser();
}, 30_000);
afterAll(async () => {
  await tb?.close();
});

describe("External Access with OIDC, in Chromium", () => {
  let daemon: Daemon;
  let provider: { issuer: string; proc: Subprocess };
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    daemon = await startDaemon();
    // The provider knows the app's own callback page, as an operator registers it.
    provider = await startProvider(`${daemon.url}/auth/callback`);
    context = await tb.browser.newContext({ viewport: { width: 1280, height: 900 } });
    // The provider's own development pages load fonts from the internet (none here): errors are
    // counted on Roost's pages only.
    page = await newPage(context, providerErrors);
    page.on("console", (message) => {
      if (message.type() === "error" && page.url().startsWith(daemon.url) && !/status of (400|401|403|404|409)/.test(message.text()))
        errors.push(`console: ${message.text()}`);
    });
    page.setDefaultTimeout(10_000);
  }, 40_000);
  afterAll(async () => {
    await context?.close();
    await daemon?.stop();
    provider?.proc.kill();
    await provider?.proc.exited;
  });

  test("the wizard: setup token from the data dir → OIDC → provider settings (errors beside the fields) → owner → finish", async () => {
    await chooseExternalAccess(page, daemon, "OpenID Connect provider");
    a11y["external access: configure OIDC"] = await axeViolations(page);
    // The callback URL is filled in with the app's own page.
    expect(await page.getByLabel("Callback URL (register it at the provider)").inputValue()).toBe(`${daemon.url}/auth/callback`);
    await page.getByLabel("Issuer URL").fill("not a url");
    await page.getByLabel("Client ID").fill(CLIENT_ID);
    await page.getByLabel("Client secret").fill(CLIENT_SECRET);
    await page.getByRole("button", { name: "Continue" }).click();
    await page.locator("#f-issuer-error").waitFor();
    expect(await page.locator("#f-issuer-error").textContent()).not.toBe("");
    await page.getByLabel("Issuer URL").fill(provider.issuer);
    await page.getByRole("button", { name: "Continue" }).click();
    await ownerAndFinish(page, "ada@example.test");
    a11y["sign-in (OIDC)"] = await axeViolations(page);
  }, 60_000);

  test("sign-in through the provider's login and consent pages and the app's callback page lands on the dashboard", async () => {
    await page.getByRole("button", { name: "Sign in with your identity provider" }).click();
    await page.waitForURL((url) => url.href.startsWith(provider.issuer));
    await page.locator('input[name="login"]').fill("ada");
    await page.locator('input[name="password"]').fill("any");
    await page.locator('button[type="submit"]').click();
    // Consent, then the provider sends the browser to /auth/callback with code and state.
    await page.locator('input[name="prompt"][value="consent"]').waitFor({ state: "attached" });
    await page.locator('button[type="submit"]').click();
    await page.getByRole("heading", { name: "Dashboard" }).waitFor({ timeout: 15_000 });
    expect(new URL(page.url()).pathname).toBe("/");
    expect(await page.locator("header .who").textContent()).toContain("ada@example.test");
    expect(await page.locator("header .who .role").textContent()).toBe("owner");
    const cookie = (await context.cookies(daemon.url)).find((c) => c.name === "roost_session");
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict" });
  }, 40_000);

  test("an expired session sends the person to sign-in, and afterwards back to the page they were on", async () => {
    await page.goto(`${daemon.url}/account`);
    await page.getByRole("heading", { name: "Your account" }).waitFor();
    // The page's own load (its token list) finishes first: a request still in flight when the
    // session ends would show sign-in for /account before the click below.
    await page.getByRole("table", { name: "API tokens" }).waitFor();
    // The session ends (as when it expires): its expiry is moved into the past in the database.
    const db = new Database(join(daemon.dataDir, "roost.db"));
    db.run("UPDATE sessions SET expires_at = 1");
    db.close();
    // The next request the page makes finds the session gone.
    await page.getByRole("link", { name: "Projects", exact: true }).click();
    await page.getByRole("heading", { name: "Sign in to Roost" }).waitFor();
    expect(await page.getByText("Your session ended.").count()).toBe(1);
    expect(new URL(page.url()).pathname).toBe("/projects");
    await page.getByRole("button", { name: "Sign in with your identity provider" }).click();
    // The provider still knows Ada (its own session): straight back, possibly through consent.
    await page.waitForURL((url) => url.pathname === "/projects" || url.href.startsWith(provider.issuer), { timeout: 15_000 });
    if (page.url().startsWith(provider.issuer)) await page.locator('button[type="submit"]').click();
    await page.getByRole("heading", { name: "Projects" }).waitFor({ timeout: 15_000 });
    expect(new URL(page.url()).pathname).toBe("/projects");
    expect(await page.locator("header .who").textContent()).toContain("ada@example.test");
  }, 40_000);
});

describe("External Access with a trusted proxy (nginx), in Chromium", () => {
  let daemon: Daemon;
  let nginx: Nginx;
  let context: BrowserContext;

  beforeAll(async () => {
    // Behind the proxy the daemon is told its public URL, as docs/external-access.md asks, so a
    // write from the proxy's origin passes the CSRF origin check.
    const port = await freePort();
    daemon = await startDaemon({ env: { ROOST_PUBLIC_URL: `http://127.0.0.1:${port}` } });
    nginx = await startNginx({
      upstream: daemon.url,
      sharedSecret: PROXY_SECRET,
      port,
    });
    context = await tb.browser.newContext({ viewport: { width: 1280, height: 900 } });
  }, 40_000);
  afterAll(async () => {
    await context?.close();
    await nginx?.stop();
    await daemon?.stop();
  });

  test("the wizard on the host: setup token → trusted proxy → its settings → owner → finish", async () => {
    const page = await newPage(context, errors);
    await chooseExternalAccess(page, daemon, "Trusted reverse proxy (identity header)");
    a11y["external access: configure trusted proxy"] = await axeViolations(page);
    // Loopback peers need a shared secret: the API's answer is shown in the form.
    await page.getByLabel("Proxy addresses (IPs or CIDRs, comma-separated)").fill("127.0.0.2");
    await page.getByRole("button", { name: "Continue" }).click();
    await page.locator(".field-error, .notice-error").first().waitFor();
    expect(await page.locator("form").textContent()).toMatch(/secret/i);
    await page.getByLabel("Shared secret (required for loopback or broad ranges)").fill(PROXY_SECRET);
    await page.getByRole("button", { name: "Continue" }).click();
    await ownerAndFinish(page, "ada@example.test");
    // Opened directly, not through the proxy: the app tried the proxy login and shows the refusal.
    await page.getByText("This request did not come from a trusted proxy.").waitFor();
    await page.close();
  }, 60_000);

  test("through nginx the app signs in by itself, returns to the page asked for, and the session cookie works for writes", async () => {
    const proxied = await tb.browser.newContext({ viewport: { width: 1280, height: 900 }, httpCredentials: { username: "ada", password: "wonderland" } });
    const page = await newPage(proxied, errors);
    await page.goto(`${nginx.url}/account`);
    await page.getByRole("heading", { name: "Your account" }).waitFor({ timeout: 15_000 });
    expect(new URL(page.url()).pathname).toBe("/account");
    expect(await page.locator("header .who").textContent()).toContain("ada@example.test");
    // A cookie-authenticated write through the proxy (origin = ROOST_PUBLIC_URL): an API token.
    await page.getByLabel("Name", { exact: true }).fill("from the proxy");
    await page.getByRole("button", { name: "Create token" }).click();
    await page.locator("code.secret", { hasText: /^roost_pat_/ }).waitFor();
    await page.getByRole("cell", { name: "from the proxy", exact: true }).waitFor();
    // Sign out, then an uninvited user of the proxy is told why they cannot come in.
    // Signing out behind the proxy stays signed out (no automatic sign-in) until Continue.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByText("You signed out.").waitFor();
    expect(await page.locator("header .who").count()).toBe(0);
    expect((await proxied.cookies()).find((c) => c.name === "roost_session")).toBeUndefined();
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByRole("heading", { name: "Dashboard" }).waitFor();
    await proxied.close();
    const stranger = await tb.browser.newContext({ httpCredentials: { username: "mallory", password: "hunter2" } });
    const other = await newPage(stranger, errors);
    await other.goto(`${nginx.url}/`);
    await other.getByText("No active user has the forwarded e-mail address; ask an admin for an invitation.").waitFor({ timeout: 15_000 });
    await stranger.close();
  }, 60_000);
});

describe("the External Access pages", () => {
  test("no serious or critical accessibility violation, no script error, no CSP violation", () => {
    expect(a11y).toEqual(Object.fromEntries(Object.keys(a11y).map((k) => [k, []])));
    expect(Object.keys(a11y).length).toBe(3);
    expect(errors).toEqual([]);
    expect(providerErrors.filter((e) => e.startsWith("pageerror"))).toEqual([]);
  });
});
