// The web app as the daemon serves it (docs/web-app.md): the app at / and at every deep link with
// a strict Content-Security-Policy, its hashed assets, the API untouched under /v1/; the browser
// session cookie the sign-in routes set, and the CSRF defence on cookie-authenticated writes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bootstrapOwner, createTestApp, loginCapability, type TestApp } from "../helpers/app.ts";

let t: TestApp;
let cookie = "";

function cookieFrom(setCookie: string | null): string {
  return (setCookie ?? "").split(";")[0]!;
}

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe("serving the app", () => {
  test("/ answers index.html with a CSP that allows no inline script and no framing", async () => {
    const res = await t.call("GET", "/");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.text).toContain('<div id="app">');
    expect(res.text).not.toMatch(/<script>|<script [^>]*>[^<]+<\/script>/); // no inline script
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'none'");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("cache-control")).toBe("no-cache");
  });

  test("a deep link (reload on a build page) answers the same app", async () => {
    const root = await t.call("GET", "/");
    const deep = await t.call("GET", "/projects/p_1/builds/b_42?tab=log#L12");
    expect(deep.status).toBe(200);
    expect(deep.text).toBe(root.text);
    expect(deep.headers.get("content-security-policy")).toBe(root.headers.get("content-security-policy"));
  });

  test("the script the page names is served as JavaScript, cached for good, with nosniff", async () => {
    const html = (await t.call("GET", "/")).text;
    const src = /<script type="module" src="(\/assets\/[^"]+\.js)"><\/script>/.exec(html)?.[1];
    expect(src).toBeDefined();
    const js = await t.call("GET", src!);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(js.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(js.headers.get("x-content-type-options")).toBe("nosniff");
    const css = /<link rel="stylesheet" href="(\/assets\/[^"]+\.css)">/.exec(html)?.[1];
    expect((await t.call("GET", css!)).headers.get("content-type")).toBe("text/css; charset=utf-8");
  });

  test("an unknown asset and an unknown API path stay JSON 404s", async () => {
    const asset = await t.call("GET", "/assets/missing-123.js");
    expect(asset.status).toBe(404);
    expect(asset.body).toEqual({ code: "not_found", message: "No endpoint at GET /assets/missing-123.js." });
    const api = await t.call("GET", "/v1/nothing-here");
    expect(api.status).toBe(404);
    expect(api.body).toEqual({ code: "not_found", message: "No endpoint at GET /v1/nothing-here." });
  });

  test("a POST to an app path is not the app's", async () => {
    const res = await t.call("POST", "/projects", { body: {} });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("not_found");
  });
});

describe("the browser session cookie", () => {
  test("local login sets an HttpOnly, SameSite=Strict cookie for the whole app, and still returns the session", async () => {
    const res = await t.call("POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } });
    expect(res.status).toBe(200);
    expect(res.body.session_token).toStartWith("roost_sess_");
    const setCookie = res.headers.get("set-cookie")!;
    expect(setCookie).toBe(`roost_session=${res.body.session_token}; Path=/; Max-Age=86400; HttpOnly; SameSite=Strict`);
    cookie = cookieFrom(setCookie);
  });

  test("the cookie signs in a GET", async () => {
    const res = await t.call("GET", "/v1/users/me", { headers: { cookie } });
    expect(res.status).toBe(200);
    expect(res.body.user.email).toBe("owner@example.test");
    expect(res.body.credential.kind).toBe("session");
  });

  test("a POST signed in by the cookie without X-Roost-CSRF is refused, and nothing is created", async () => {
    const res = await t.call("POST", "/v1/api-tokens", { headers: { cookie }, body: { name: "ci", role: "developer" } });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ code: "csrf_refused", message: "A request signed in by the browser session cookie must send the header 'X-Roost-CSRF: 1'." });
    const list = await t.call("GET", "/v1/api-tokens", { headers: { cookie } });
    expect(list.body.tokens).toEqual([]);
  });

  test("a DELETE and a PATCH without the header are refused too", async () => {
    for (const [method, path] of [
      ["DELETE", "/v1/api-tokens/t_1"],
      ["PATCH", "/v1/users/u_1"],
    ] as const) {
      const res = await t.call(method, path, { headers: { cookie }, body: { active: false } });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe("csrf_refused");
    }
  });

  test("the header from another origin is refused", async () => {
    const res = await t.call("POST", "/v1/api-tokens", {
      headers: { cookie, "x-roost-csrf": "1", origin: "https://evil.example" },
      body: { name: "ci", role: "developer" },
    });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ code: "csrf_refused", message: "The request's Origin is not this Roost, so the browser session cannot be used." });
    const crossSite = await t.call("POST", "/v1/api-tokens", {
      headers: { cookie, "x-roost-csrf": "1", "sec-fetch-site": "cross-site" },
      body: { name: "ci", role: "developer" },
    });
    expect(crossSite.body).toEqual({ code: "csrf_refused", message: "A cross-site request cannot use the browser session." });
  });

  test("with the header from this origin the write goes through", async () => {
    const res = await t.call("POST", "/v1/api-tokens", {
      headers: { cookie, "x-roost-csrf": "1", origin: "http://127.0.0.1:8080" },
      body: { name: "ci", role: "developer" },
    });
    expect(res.status).toBe(201);
    expect(res.body.name).toBe("ci");
  });

  test("bearer tokens work exactly as before: no CSRF header needed, and they win over a cookie", async () => {
    const owner = await t.call("POST", "/v1/auth/local/login", { body: { email: "owner@example.test", recovery_capability: await loginCapability(t) } });
    const res = await t.call("POST", "/v1/api-tokens", { token: owner.body.session_token, body: { name: "bearer", role: "developer" } });
    expect(res.status).toBe(201);
    const wrong = await t.call("GET", "/v1/users/me", { token: "roost_sess_invalid", headers: { cookie } });
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe("invalid_session");
  });

  test("an API token in the session cookie is refused: the cookie carries sessions only", async () => {
    const owner = await t.call("POST", "/v1/auth/local/login", { body: { email: "owner@example.test", recovery_capability: await loginCapability(t) } });
    const pat = (await t.call("POST", "/v1/api-tokens", { token: owner.body.session_token, body: { name: "in a cookie", role: "developer" } })).body
      .token as string;
    expect((await t.call("GET", "/v1/users/me", { token: pat })).status).toBe(200);
    const refused = {
      code: "wrong_credential",
      message:
        "The roost_session cookie carries a user session only, not an API token (roost_pat_…); send other credentials as 'Authorization: Bearer <token>'.",
    };
    const read = await t.call("GET", "/v1/users/me", { headers: { cookie: `roost_session=${pat}` } });
    expect(read.status).toBe(401);
    expect(read.body).toEqual(refused);
    const write = await t.call("POST", "/v1/api-tokens", {
      headers: { cookie: `roost_session=${pat}`, "x-roost-csrf": "1", origin: "http://127.0.0.1:8080" },
      body: { name: "via cookie", role: "developer" },
    });
    expect(write.status).toBe(401);
    expect(write.body).toEqual(refused);
  });

  test("logout through the cookie clears it, and the old cookie no longer signs in", async () => {
    const refused = await t.call("POST", "/v1/auth/logout", { headers: { cookie } });
    expect(refused.status).toBe(403);
    const res = await t.call("POST", "/v1/auth/logout", { headers: { cookie, "x-roost-csrf": "1" } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    expect(res.headers.get("set-cookie")).toBe("roost_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict");
    const after = await t.call("GET", "/v1/users/me", { headers: { cookie } });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe("invalid_session");
  });

  test("the cookie is Secure when Roost is reached over https (ROOST_PUBLIC_URL)", async () => {
    const https = await createTestApp({ ROOST_PUBLIC_URL: "https://ci.example.com" });
    try {
      await bootstrapOwner(https);
      const capability = await loginCapability(https);
      const res = await https.call("POST", "/v1/auth/local/login", { body: { recovery_capability: capability } });
      expect(res.status).toBe(200);
      expect(res.headers.get("set-cookie")).toEndWith("; Path=/; Max-Age=86400; Secure; HttpOnly; SameSite=Strict");
    } finally {
      https.close();
    }
  });
});
