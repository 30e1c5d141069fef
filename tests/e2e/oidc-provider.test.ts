// OIDC sign-in end to end: a real daemon and a real OpenID Provider
// (npm `oidc-provider` under node, tests/support/oidc-provider.mjs) with PKCE required and an
// e-mail claim. The test plays the browser: start, the provider's login and consent forms over
// plain HTTP with a cookie jar, the redirect to the frontend callback, then Roost's callback.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { http, startDaemon, type Daemon } from "../helpers/daemon.ts";

const CLIENT_ID = "roost-e2e";
const CLIENT_SECRET = "e2e-client-secret-" + crypto.randomUUID();
const CALLBACK = "https://ci.example.test/auth/callback";
let daemon: Daemon;
/** A second process on the same data dir (same key file), and a third given another ROOST_SECRET_KEY. */
let second: Daemon;
let otherKey: Daemon;
let provider: Subprocess;
let issuer = "";

async function startProvider(): Promise<void> {
  provider = Bun.spawn(["node", resolve(import.meta.dir, "../support/oidc-provider.mjs"), CLIENT_ID, CLIENT_SECRET, CALLBACK], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = (provider.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  const deadline = Date.now() + 15_000;
  while (!text.includes("\n")) {
    if (Date.now() > deadline) throw new Error("oidc-provider did not start");
    const { value, done } = await reader.read();
    if (done) throw new Error(`oidc-provider exited: ${await new Response(provider.stderr as ReadableStream).text()}`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  issuer = (JSON.parse(text.split("\n")[0]!) as { issuer: string }).issuer;
}

beforeAll(async () => {
  await startProvider();
  daemon = await startDaemon();
  const token = readFileSync(join(daemon.dataDir, "setup-token"), "utf8").trim();
  const steps = [
    await http(daemon.url, "POST", "/v1/setup/preferences", { token, body: { runtime_mode: "remote", remote_auth_mode: "oidc" } }),
    await http(daemon.url, "POST", "/v1/setup/owner", { token, body: { email: "ada@example.test" } }),
    await http(daemon.url, "PUT", "/v1/setup/oidc", {
      token,
      body: { issuer, client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [CALLBACK], scopes: ["openid", "email"] },
    }),
    await http(daemon.url, "POST", "/v1/setup/complete", { token }),
  ];
  for (const s of steps) if (s.status >= 300) throw new Error(`setup failed: ${s.status} ${JSON.stringify(s.body)}`);
  const key = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64");
  [second, otherKey] = await Promise.all([
    startDaemon({ dataDir: daemon.dataDir, cleanup: false }),
    startDaemon({ dataDir: daemon.dataDir, cleanup: false, env: { ROOST_SECRET_KEY: key } }),
  ]);
});
afterAll(async () => {
  await Promise.all([second?.stop(), otherKey?.stop()]);
  await daemon?.stop();
  provider?.kill();
  await provider?.exited;
});

/** The browser at the provider: follows redirects, submits the dev login and consent forms, stops at our callback URL. */
async function browseProvider(authorizationUrl: string, login: string): Promise<URLSearchParams> {
  const jar = new Map<string, string>();
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
  const remember = (res: Response) => {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const eq = pair!.indexOf("=");
      jar.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
  };
  let url = authorizationUrl;
  let request: RequestInit = { method: "GET" };
  for (let hop = 0; hop < 12; hop++) {
    const res = await fetch(url, { ...request, redirect: "manual", headers: { ...(request.headers as Record<string, string>), cookie: cookie() } });
    remember(res);
    if (res.status >= 300 && res.status < 400) {
      await res.arrayBuffer();
      const next = new URL(res.headers.get("location")!, url);
      if (next.href.startsWith(CALLBACK)) return next.searchParams;
      url = next.href;
      request = { method: "GET" };
      continue;
    }
    const html = await res.text();
    if (res.status !== 200) throw new Error(`provider answered ${res.status}: ${html.slice(0, 300)}`);
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (!action) throw new Error(`no form at ${url}: ${html.slice(0, 300)}`);
    const form: Record<string, string> = html.includes('name="login"') ? { prompt: "login", login, password: "any" } : { prompt: "consent" };
    url = new URL(action, url).href;
    request = { method: "POST", body: new URLSearchParams(form).toString(), headers: { "content-type": "application/x-www-form-urlencoded" } };
  }
  throw new Error("too many hops at the provider");
}

/** The provider's redirect back to Roost: its code and state posted to `url` from the browser holding `binding` (the cookie /v1/auth/oidc/start set). */
function postCallback(url: string, returned: URLSearchParams, binding: string) {
  return http(url, "POST", "/v1/auth/oidc/callback", { body: { code: returned.get("code"), state: returned.get("state") }, headers: { cookie: binding } });
}

describe("OIDC sign-in through oidc-provider", () => {
  test("start, the provider's login and consent, callback: a Roost session bound to the provider's subject", async () => {
    const start = await http(daemon.url, "GET", "/v1/auth/oidc/start");
    expect(start.status).toBe(200);
    const binding = start.headers.get("set-cookie")!.split(";")[0]!;
    expect(binding).toMatch(/^__Host-roost_oidc=/);
    const sent = new URL(start.body.authorization_url).searchParams;
    expect([sent.get("code_challenge_method"), sent.get("redirect_uri")]).toEqual(["S256", CALLBACK]);

    const returned = await browseProvider(start.body.authorization_url, "ada");
    expect(returned.get("state")).toBe(start.body.state);
    expect(returned.get("iss")).toBe(issuer);

    const callback = await postCallback(daemon.url, returned, binding);
    expect(callback.status).toBe(200);
    // Both cookies: the binding is cleared, and the browser gets its session (docs/web-app.md "Security").
    const setCookies = callback.headers.getSetCookie();
    expect(setCookies.find((c) => c.startsWith("__Host-roost_oidc="))).toContain("Max-Age=0");
    expect(setCookies.find((c) => c.startsWith("roost_session="))).toMatch(/^roost_session=[^;]+;.*HttpOnly.*SameSite=Strict/i);
    expect(callback.body.user).toEqual({
      id: expect.any(String),
      user_id: expect.any(String),
      email: "ada@example.test",
      oidc_subject: "ada",
      role: "owner",
      avatar_url: "",
    });
    const me = await http(daemon.url, "GET", "/v1/users/me", { token: callback.body.session_token });
    expect(me.status).toBe(200);

    // The code and state are spent: a replay is refused by Roost before the provider is asked again.
    const replay = await postCallback(daemon.url, returned, binding);
    expect(replay.body).toEqual({ code: "invalid_state", message: "This sign-in is unknown or was already used; start again." });
  });

  test("the provider refuses an authorization request without PKCE, so Roost's S256 challenge is what lets it through", async () => {
    const start = await http(daemon.url, "GET", "/v1/auth/oidc/start");
    const url = new URL(start.body.authorization_url);
    url.searchParams.delete("code_challenge");
    url.searchParams.delete("code_challenge_method");
    const refused = await browseProvider(url.href, "ada");
    expect(refused.get("error")).toBe("invalid_request");
  });

  test("a code exchanged with another browser's binding is refused: login CSRF", async () => {
    const attacker = await http(daemon.url, "GET", "/v1/auth/oidc/start");
    const returned = await browseProvider(attacker.body.authorization_url, "ada");
    const victim = await http(daemon.url, "GET", "/v1/auth/oidc/start");
    const res = await postCallback(daemon.url, returned, victim.headers.get("set-cookie")!.split(";")[0]!);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: "invalid_state", message: "This sign-in was started in another browser; start again here." });
  });

  test("a flow started on one daemon process finishes on another: pending authorizations live in the database", async () => {
    const start = await http(daemon.url, "GET", "/v1/auth/oidc/start");
    const returned = await browseProvider(start.body.authorization_url, "ada");
    const res = await postCallback(second.url, returned, start.headers.get("set-cookie")!.split(";")[0]!);
    expect(res.status).toBe(200);
    expect(res.body.user.email).toBe("ada@example.test");
  });

  test("a process with another ROOST_SECRET_KEY cannot open the client secret: 500 decryption_error", async () => {
    const start = await http(otherKey.url, "GET", "/v1/auth/oidc/start");
    const returned = await browseProvider(start.body.authorization_url, "ada");
    const res = await postCallback(otherKey.url, returned, start.headers.get("set-cookie")!.split(";")[0]!);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ code: "decryption_error", message: "The stored client secret cannot be decrypted with this instance's key; set it again." });
    // The refused callback spent the state (single use); the process holding the right key still serves new flows.
    const again = await http(daemon.url, "GET", "/v1/auth/oidc/start");
    expect(again.status).toBe(200);
  });
});
