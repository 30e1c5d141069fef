// Trusted-proxy sign-in in-process with injected socket peers: every code of
// docs/external-access.md "With a trusted proxy", trust from the peer only (never X-Forwarded-For), one identity only,
// and the identity header honoured on this route alone
// (RFC 9700 §4.13: a proxy must sanitize the headers it passes on).
import { afterEach, describe, expect, test } from "bun:test";
import { bootstrapOwner, createTestApp, setupToken, type TestApp } from "../helpers/app.ts";
import { invite, readyWithOidc, readyWithTrustedProxy } from "../helpers/external-access.ts";

const SECRET = "proxy-shared-secret-0123456789";
const PATH = "/v1/auth/trusted-proxy/login";
const apps: TestApp[] = [];
afterEach(() => {
  for (const t of apps.splice(0)) t.close();
});

async function app(): Promise<TestApp> {
  const t = await createTestApp();
  apps.push(t);
  return t;
}

async function proxied(
  settings: Record<string, unknown> = { trusted_peers: ["10.0.0.5", "2001:db8:1::/64", "::ffff:192.0.2.10"], shared_secret: SECRET },
): Promise<TestApp> {
  const t = await app();
  await readyWithTrustedProxy(t, settings);
  await invite(t, "ada@example.test");
  return t;
}

const good = { "x-roost-user-email": "ada@example.test", "x-roost-trusted-proxy-secret": SECRET };

describe("POST /v1/auth/trusted-proxy/login", () => {
  test("a trusted peer with the secret and one e-mail gets a new session on every login", async () => {
    const t = await proxied();
    const first = await t.call("POST", PATH, { peer: "10.0.0.5", headers: good });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      session_token: expect.stringMatching(/^roost_sess_/),
      expires_at: t.clock.now() + 24 * 3600,
      user: { id: expect.any(String), user_id: expect.any(String), email: "ada@example.test", oidc_subject: "", role: "developer", avatar_url: "" },
    });
    const second = await t.call("POST", PATH, { peer: "10.0.0.5", headers: good });
    expect(second.body.session_token).not.toBe(first.body.session_token);
    expect((await t.call("GET", "/v1/users/me", { token: second.body.session_token })).status).toBe(200);
  });

  test("trusted peers match IPv4, IPv6 CIDRs and the ::ffff: mapped forms in either place", async () => {
    const t = await proxied();
    for (const peer of ["::ffff:10.0.0.5", "2001:db8:1::17", "192.0.2.10", "::ffff:192.0.2.10"]) {
      expect([peer, (await t.call("POST", PATH, { peer, headers: good })).status]).toEqual([peer, 200]);
    }
  });

  test("403 trusted_proxy_peer_not_allowed from any other peer, whatever X-Forwarded-For or Forwarded say", async () => {
    const t = await proxied();
    for (const peer of ["10.0.0.6", "127.0.0.1", "2001:db8:2::1", null]) {
      const res = await t.call("POST", PATH, { peer, headers: { ...good, "x-forwarded-for": "10.0.0.5", forwarded: "for=10.0.0.5", "x-real-ip": "10.0.0.5" } });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ code: "trusted_proxy_peer_not_allowed", message: "This request did not come from a trusted proxy." });
    }
  });

  test("401 for a missing or wrong shared secret", async () => {
    const t = await proxied();
    const missing = await t.call("POST", PATH, { peer: "10.0.0.5", headers: { "x-roost-user-email": "ada@example.test" } });
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ code: "trusted_proxy_shared_secret_missing", message: "The trusted proxy must send X-Roost-Trusted-Proxy-Secret." });
    for (const wrong of ["nope", SECRET + "x", SECRET.slice(0, -1)]) {
      const res = await t.call("POST", PATH, { peer: "10.0.0.5", headers: { ...good, "x-roost-trusted-proxy-secret": wrong } });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ code: "trusted_proxy_shared_secret_invalid", message: "X-Roost-Trusted-Proxy-Secret does not match." });
    }
  });

  test("401 trusted_proxy_identity_missing and _invalid: absent, not an e-mail, a list, or a repeated header", async () => {
    const t = await proxied();
    const missing = await t.call("POST", PATH, { peer: "10.0.0.5", headers: { "x-roost-trusted-proxy-secret": SECRET } });
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ code: "trusted_proxy_identity_missing", message: "The trusted proxy sent no X-Roost-User-Email header." });
    for (const value of ["not-an-email", "ada@example.test, owner@example.test", "ada@example.test,owner@example.test"]) {
      const res = await t.call("POST", PATH, { peer: "10.0.0.5", headers: { ...good, "x-roost-user-email": value } });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe("trusted_proxy_identity_invalid");
    }
    const headers = new Headers({ host: "127.0.0.1:8080", "x-roost-trusted-proxy-secret": SECRET });
    headers.append("X-Roost-User-Email", "ada@example.test");
    headers.append("x-roost-user-email", "owner@example.test");
    const repeated = await t.app.fetch(new Request(`http://127.0.0.1:8080${PATH}`, { method: "POST", headers }), "10.0.0.5");
    expect(repeated.status).toBe(401);
    expect(await repeated.json()).toEqual({ code: "trusted_proxy_identity_invalid", message: "X-Roost-User-Email must carry exactly one e-mail address." });
  });

  test("403 user_not_found for a forwarded e-mail nobody invited", async () => {
    const t = await proxied();
    const res = await t.call("POST", PATH, { peer: "10.0.0.5", headers: { ...good, "x-roost-user-email": "stranger@example.test" } });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ code: "user_not_found", message: "No active user has the forwarded e-mail address; ask an admin for an invitation." });
  });

  test("a configured identity header name is honoured; without a secret a single non-loopback peer needs none", async () => {
    const t = await proxied({ trusted_peers: ["10.0.0.5"], identity_header: "X-Auth-Email" });
    const res = await t.call("POST", PATH, { peer: "10.0.0.5", headers: { "x-auth-email": "ada@example.test" } });
    expect(res.status).toBe(200);
    const old = await t.call("POST", PATH, { peer: "10.0.0.5", headers: { "x-roost-user-email": "ada@example.test" } });
    expect(old.body.code).toBe("trusted_proxy_identity_missing");
  });

  test("the identity header is never authentication on other endpoints", async () => {
    const t = await proxied();
    const res = await t.call("GET", "/v1/users/me", { peer: "10.0.0.5", headers: good });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("missing_auth");
  });

  test("403 mode_restricted on a Local Only instance and in OIDC mode", async () => {
    const local = await app();
    await bootstrapOwner(local);
    const oidc = await app();
    await readyWithOidc(oidc, { issuer: "https://idp.example.test", clientId: "c", clientSecret: "s" });
    for (const t of [local, oidc]) {
      const res = await t.call("POST", PATH, { peer: "10.0.0.5", headers: good });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ code: "mode_restricted", message: "Trusted-proxy sign-in is available only in External Access mode with a trusted proxy." });
    }
  });

  test("409 setup_incomplete before the instance is ready", async () => {
    const t = await app();
    const res = await t.call("POST", PATH, { peer: "10.0.0.5", headers: good });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ code: "setup_incomplete", message: "Setup is not complete; finish it before signing in." });
  });
});

describe("trusted proxy settings", () => {
  test("setup/complete waits for them; loopback or broad peers need a shared secret; nobody reads the secret back", async () => {
    const t = await app();
    const token = await setupToken(t);
    await t.call("POST", "/v1/setup/preferences", { token, body: { runtime_mode: "remote", remote_auth_mode: "trusted_proxy" } });
    await t.call("POST", "/v1/setup/owner", { token, body: { email: "owner@example.test" } });
    expect((await t.call("POST", "/v1/setup/complete", { token })).body).toEqual({
      code: "remote_auth_not_configured",
      message: "Configure the trusted proxy with PUT /v1/setup/trusted-proxy first.",
    });
    for (const peers of [["127.0.0.2"], ["::1"], ["10.0.0.0/16"], ["2001:db8::/48"], ["::ffff:127.0.0.1"]]) {
      const res = await t.call("PUT", "/v1/setup/trusted-proxy", { token, body: { trusted_peers: peers } });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        code: "invalid_request",
        message: "A shared secret is required when a trusted peer is a loopback address or a broad range.",
        details: [{ path: "shared_secret", message: `required for ${peers[0]}` }],
      });
    }
    expect((await t.call("PUT", "/v1/setup/trusted-proxy", { token, body: { trusted_peers: ["not-an-ip"] } })).status).toBe(400);
    for (const identity_header of ["Authorization", "x-forwarded-for", "X-Roost-Trusted-Proxy-Secret", "X_Email"]) {
      expect([
        identity_header,
        (await t.call("PUT", "/v1/setup/trusted-proxy", { token, body: { trusted_peers: ["10.0.0.5"], identity_header } })).status,
      ]).toEqual([identity_header, 400]);
    }
    const put = await t.call("PUT", "/v1/setup/trusted-proxy", { token, body: { trusted_peers: ["127.0.0.2"], shared_secret: SECRET } });
    expect(put.body).toEqual({ trusted_peers: ["127.0.0.2"], identity_header: "X-Roost-User-Email", shared_secret_set: true, updated_at: t.clock.now() });
    expect((await t.call("POST", "/v1/setup/complete", { token })).status).toBe(200);
    expect(JSON.stringify((await t.db.execute("SELECT * FROM trusted_proxy_settings")).rows)).not.toContain(SECRET);
  });

  test("owners and admins change them after setup; omitting the secret keeps it", async () => {
    const t = await proxied();
    const owner = (await t.call("POST", PATH, { peer: "10.0.0.5", headers: { ...good, "x-roost-user-email": "owner@example.test" } })).body
      .session_token as string;
    const developer = (await t.call("POST", PATH, { peer: "10.0.0.5", headers: good })).body.session_token as string;
    expect((await t.call("GET", "/v1/settings/trusted-proxy", { token: developer })).status).toBe(403);
    const put = await t.call("PUT", "/v1/settings/trusted-proxy", { token: owner, body: { trusted_peers: ["127.0.0.2"] } });
    expect(put.body).toEqual({ trusted_peers: ["127.0.0.2"], identity_header: "X-Roost-User-Email", shared_secret_set: true, updated_at: t.clock.now() });
    expect((await t.call("GET", "/v1/settings/trusted-proxy", { token: owner })).body).toEqual({ configured: true, ...put.body });
    expect((await t.call("POST", PATH, { peer: "127.0.0.2", headers: good })).status).toBe(200);
    expect((await t.call("POST", PATH, { peer: "10.0.0.5", headers: good })).body.code).toBe("trusted_proxy_peer_not_allowed");
  });
});
