// OIDC sign-in in-process against a test stand-in provider (tests/support/test-op.ts): every
// code of docs/external-access.md "Errors", the ID token checks of OIDC Core §3.1.3.7, the
// browser binding of RFC 9700 §2.1.1, e-mail from UserInfo (OIDC Core §5.3), email_verified and
// the (iss, sub) binding (OIDC Core §5.7), and the per-peer cap on pending authorizations.
import { afterEach, describe, expect, test } from "bun:test";
import { bootstrapOwner, createTestApp, setupToken, type Called, type TestApp } from "../helpers/app.ts";
import { OTHER_CALLBACK, STANDARD_CALLBACK, invite, readyWithOidc } from "../helpers/external-access.ts";
import { startTestOp, type IdTokenScenario, type TestOp } from "../support/test-op.ts";
import { PENDING_PER_PEER } from "../../lib/auth/oidc-pending.ts";
import { JWKS_REFETCH_COOLDOWN_SECONDS } from "../../lib/auth/oidc.ts";

const open: { t: TestApp; op: TestOp }[] = [];
afterEach(() => {
  for (const { t, op } of open.splice(0)) {
    t.close();
    op.stop();
  }
});

async function instance(extra: Record<string, unknown> = {}): Promise<{ t: TestApp; op: TestOp }> {
  const t = await createTestApp();
  const op = await startTestOp({ nowSeconds: () => t.clock.now() });
  open.push({ t, op });
  await readyWithOidc(t, op, extra);
  await invite(t, "ada@example.test");
  return { t, op };
}

function cookieOf(headers: Headers): string {
  const set = headers.get("set-cookie") ?? "";
  return set.split(";")[0]!;
}

async function start(t: TestApp, query = "", peer = "203.0.113.7") {
  const res = await t.call("GET", `/v1/auth/oidc/start${query}`, { peer });
  if (res.status !== 200) throw new Error(`start failed: ${res.status} ${res.text}`);
  return { ...(res.body as { authorization_url: string; state: string }), cookie: cookieOf(res.headers), headers: res.headers };
}

/** Starts a sign-in at the provider, lets `meanwhile` change the instance before the browser comes back, then answers the callback. */
async function callbackAfter(t: TestApp, op: TestOp, meanwhile: () => unknown): Promise<Called> {
  const started = await start(t);
  const { code, state } = op.authorize(started.authorization_url);
  await meanwhile();
  return t.call("POST", "/v1/auth/oidc/callback", { body: { code, state }, headers: { cookie: started.cookie } });
}

async function signIn(t: TestApp, op: TestOp, scenario: IdTokenScenario = {}) {
  const started = await start(t);
  const { code, state } = op.authorize(started.authorization_url, scenario);
  return t.call("POST", "/v1/auth/oidc/callback", { body: { code, state }, headers: { cookie: started.cookie }, peer: "203.0.113.7" });
}

describe("GET /v1/auth/oidc/start", () => {
  test("returns the provider URL with PKCE S256, a 256-bit state and nonce, the claims request, and a __Host- cookie", async () => {
    const { t, op } = await instance();
    const started = await start(t);
    const url = new URL(started.authorization_url);
    expect(url.origin + url.pathname).toBe(`${op.issuer}/authorize`);
    const q = url.searchParams;
    expect(q.get("response_type")).toBe("code");
    expect(q.get("client_id")).toBe(op.clientId);
    expect(q.get("redirect_uri")).toBe(STANDARD_CALLBACK);
    expect(q.get("code_challenge_method")).toBe("S256");
    expect(q.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get("state")).toBe(started.state);
    expect(started.state).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get("nonce")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get("scope")).toBe("openid email profile");
    expect(JSON.parse(q.get("claims")!)).toEqual({ id_token: { email: { essential: true }, email_verified: { essential: true } } });
    expect(q.has("code_verifier")).toBe(false);
    expect(started.headers.get("set-cookie")).toMatch(/^__Host-roost_oidc=[A-Za-z0-9_-]{43}; Path=\/; Secure; HttpOnly; SameSite=Lax; Max-Age=600$/);
    // The verifier never leaves the server: not in the body, not in the URL.
    const row = (await t.db.execute("SELECT code_verifier FROM oidc_pending")).rows[0]!;
    expect(JSON.stringify(started)).not.toContain(String(row.code_verifier));
  });

  test("redirect_uri comes only from the allow-list; anything else falls back to the standard callback", async () => {
    const { t } = await instance();
    expect(new URL((await start(t, `?redirect_uri=${encodeURIComponent(OTHER_CALLBACK)}`)).authorization_url).searchParams.get("redirect_uri")).toBe(
      OTHER_CALLBACK,
    );
    expect(new URL((await start(t, `?redirect_uri=${encodeURIComponent("https://evil.example/cb")}`)).authorization_url).searchParams.get("redirect_uri")).toBe(
      STANDARD_CALLBACK,
    );
  });

  test("409 setup_incomplete before the instance is ready", async () => {
    const t = await createTestApp();
    try {
      const res = await t.call("GET", "/v1/auth/oidc/start");
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ code: "setup_incomplete", message: "Setup is not complete; finish it before signing in." });
    } finally {
      t.close();
    }
  });

  test("409 oidc_not_configured on a Local Only instance, naming the settings that turn OIDC on", async () => {
    const t = await createTestApp();
    try {
      await bootstrapOwner(t);
      const res = await t.call("GET", "/v1/auth/oidc/start");
      expect(res.status).toBe(409);
      expect(res.body).toEqual({
        code: "oidc_not_configured",
        message:
          'Sign-in with an identity provider is not configured on this instance: an owner stores the provider with PUT /v1/settings/oidc and turns it on with PUT /v1/settings/runtime-mode {"runtime_mode":"remote","remote_auth_mode":"oidc"} (docs/external-access.md).',
      });
    } finally {
      t.close();
    }
  });

  test("502 oidc_discovery_error when the discovery document cannot be fetched", async () => {
    const t = await createTestApp();
    const op = await startTestOp({ nowSeconds: () => t.clock.now() });
    open.push({ t, op });
    op.discoveryBroken = true;
    await readyWithOidc(t, op);
    const res = await t.call("GET", "/v1/auth/oidc/start");
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ code: "oidc_discovery_error", message: "The identity provider's discovery document could not be fetched or is not valid." });
  });

  test("429 too_many_pending at 1000 pending authorizations; expired ones are evicted first", async () => {
    const { t } = await instance();
    const now = t.clock.now();
    const stmts = Array.from({ length: 1000 }, (_, i) => ({
      sql: "INSERT INTO oidc_pending (state_hash, binding_hash, nonce, code_verifier, redirect_uri, peer, created_at, expires_at) VALUES (?, 'b', 'n', 'v', 'r', ?, ?, ?)",
      args: [`s${i}`, `198.51.100.${i % 250}`, now, now + 600],
    }));
    await t.db.batch(stmts, "write");
    const res = await t.call("GET", "/v1/auth/oidc/start", { peer: "203.0.113.9" });
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ code: "too_many_pending", message: "Too many sign-ins are in progress; try again in a few minutes." });
    t.clock.advance(601);
    expect((await t.call("GET", "/v1/auth/oidc/start", { peer: "203.0.113.9" })).status).toBe(200);
  });

  test(`one peer holds at most ${PENDING_PER_PEER} pending authorizations: its oldest are evicted, nobody else's`, async () => {
    const { t, op } = await instance();
    const other = await start(t, "", "192.0.2.1");
    const first = await start(t, "", "203.0.113.50");
    for (let i = 0; i < PENDING_PER_PEER + 5; i++) await start(t, "", "203.0.113.50");
    const count = (await t.db.execute("SELECT peer, COUNT(*) AS n FROM oidc_pending GROUP BY peer ORDER BY peer")).rows.map((r) => [r.peer, Number(r.n)]);
    expect(count).toEqual([
      ["192.0.2.1", 1],
      ["203.0.113.50", PENDING_PER_PEER],
    ]);
    const evicted = op.authorize(first.authorization_url);
    expect(
      (await t.call("POST", "/v1/auth/oidc/callback", { body: { code: evicted.code, state: evicted.state }, headers: { cookie: first.cookie } })).body.code,
    ).toBe("invalid_state");
    const kept = op.authorize(other.authorization_url);
    expect((await t.call("POST", "/v1/auth/oidc/callback", { body: { code: kept.code, state: kept.state }, headers: { cookie: other.cookie } })).status).toBe(
      200,
    );
  });
});

describe("POST /v1/auth/oidc/callback", () => {
  test("a verified ID token with a verified e-mail signs the invited user in and binds (iss, sub)", async () => {
    const { t, op } = await instance();
    const res = await signIn(t, op);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      session_token: expect.stringMatching(/^roost_sess_/),
      expires_at: t.clock.now() + 24 * 3600,
      user: { id: expect.any(String), user_id: expect.any(String), email: "ada@example.test", oidc_subject: "sub-ada", role: "developer", avatar_url: "" },
    });
    expect(res.headers.get("set-cookie")).toContain("__Host-roost_oidc=; ");
    const me = await t.call("GET", "/v1/users/me", { token: res.body.session_token });
    expect(me.status).toBe(200);
    const bound = (await t.db.execute("SELECT oidc_issuer, oidc_subject FROM users WHERE email = 'ada@example.test'")).rows[0]!;
    expect([bound.oidc_issuer, bound.oidc_subject]).toEqual([op.issuer, "sub-ada"]);
    // A second login is a new session, under the same subject.
    const again = await signIn(t, op);
    expect(again.status).toBe(200);
    expect(again.body.session_token).not.toBe(res.body.session_token);
  });

  test("the e-mail comes from UserInfo when the ID token has none, if UserInfo names the same subject", async () => {
    const { t, op } = await instance();
    const ok = await signIn(t, op, { email: null, userinfo: { sub: "sub-ada", email: "ada@example.test", email_verified: true } });
    expect(ok.status).toBe(200);
    const other = await signIn(t, op, { email: null, userinfo: { sub: "sub-mallory", email: "ada@example.test", email_verified: true } });
    expect(other.body).toEqual({ code: "id_token_verification_error", message: "The UserInfo response names another subject than the ID token." });
  });

  test("HS256 with the client secret is accepted only when the operator listed HS256", async () => {
    const { t, op } = await instance({ id_token_algs: ["HS256"] });
    expect((await signIn(t, op, { alg: "HS256" })).status).toBe(200);
    expect((await signIn(t, op, { alg: "RS256" })).body.code).toBe("id_token_verification_error");
  });

  const rejected: [string, IdTokenScenario, string][] = [
    ["a wrong nonce", { nonce: "not-the-nonce-we-sent" }, "The ID token's nonce does not match this sign-in."],
    ["another audience", { aud: "someone-else" }, "The ID token names an audience this client does not trust (aud)."],
    ["two audiences with a foreign azp", { aud: ["roost-test-client", "other"], azp: "other" }, "The ID token was issued to another client (azp)."],
    // OIDC Core §3.1.3.7 step 5: when azp is present the Client verifies that it is its own client id, whatever the audiences.
    ["our client id as the only audience with a foreign azp", { aud: "roost-test-client", azp: "evil" }, "The ID token was issued to another client (azp)."],
    [
      "our client id as a one-element audience with a foreign azp",
      { aud: ["roost-test-client"], azp: "evil" },
      "The ID token was issued to another client (azp).",
    ],
    ["another issuer", { iss: "http://127.0.0.1:1/evil" }, "The ID token was issued by another issuer (iss)."],
    ["an expired token", { iatOffset: -1000, lifetime: 300 }, "The ID token has expired (exp)."],
    ["an iat in the future", { iatOffset: 600 }, "The ID token was issued in the future (iat)."],
    ["an iat older than 10 minutes", { iatOffset: -700, lifetime: 3600 }, "The ID token is too old (iat)."],
    ["alg none", { alg: "none" }, "The ID token is signed with an algorithm this instance does not accept (alg)."],
    ["HS256 signed with the client secret", { alg: "HS256" }, "The ID token is signed with an algorithm this instance does not accept (alg)."],
    ["a key the JWKS does not hold", { unknownKey: true }, "The ID token's signature does not verify with the identity provider's keys."],
  ];
  for (const [name, scenario, message] of rejected) {
    test(`502 id_token_verification_error for ${name}`, async () => {
      const { t, op } = await instance();
      const res = await signIn(t, op, scenario);
      expect(res.status).toBe(502);
      expect(res.body).toEqual({ code: "id_token_verification_error", message });
    });
  }

  // OIDC Core §3.1.3.7 step 3: "The ID Token MUST be rejected if [...] it contains additional
  // audiences not trusted by the Client." Roost trusts only its own client id.
  test("an ID token also addressed to another audience is refused, with or without azp; our client id alone passes", async () => {
    const { t, op } = await instance();
    const untrusted = { code: "id_token_verification_error", message: "The ID token names an audience this client does not trust (aud)." };
    for (const scenario of [{ aud: ["roost-test-client", "evil"] }, { aud: ["roost-test-client", "evil"], azp: "roost-test-client" }] as IdTokenScenario[]) {
      const res = await signIn(t, op, scenario);
      expect(res.status).toBe(502);
      expect(res.body).toEqual(untrusted);
    }
    for (const scenario of [
      { aud: "roost-test-client" },
      { aud: ["roost-test-client"] },
      { aud: "roost-test-client", azp: "roost-test-client" },
    ] as IdTokenScenario[]) {
      const res = await signIn(t, op, scenario);
      expect(res.status).toBe(200);
      expect(res.body.user.email).toBe("ada@example.test");
    }
  });

  test(`a key replaced under the same kid is refetched once; further refetches wait ${JWKS_REFETCH_COOLDOWN_SECONDS} s`, async () => {
    const { t, op } = await instance();
    expect((await signIn(t, op)).status).toBe(200);
    expect(op.jwksCalls).toBe(1);
    // The provider rotates its key but keeps the kid: the cached key no longer verifies; one refetch does.
    await op.rotateKey();
    expect((await signIn(t, op)).status).toBe(200);
    expect(op.jwksCalls).toBe(2);
    // Cached keys serve the next sign-ins without a request.
    expect((await signIn(t, op)).status).toBe(200);
    expect(op.jwksCalls).toBe(2);
    // Within the cooldown, neither a rotation nor a flood of bad signatures reaches the provider's JWKS.
    await op.rotateKey();
    for (const scenario of [{}, { unknownKey: true }, { unknownKey: true }] as IdTokenScenario[]) {
      const res = await signIn(t, op, scenario);
      expect(res.status).toBe(502);
      expect(res.body).toEqual({ code: "id_token_verification_error", message: "The ID token's signature does not verify with the identity provider's keys." });
    }
    expect(op.jwksCalls).toBe(2);
    // After it, the next failure refetches again.
    t.clock.advance(JWKS_REFETCH_COOLDOWN_SECONDS);
    expect((await signIn(t, op)).status).toBe(200);
    expect(op.jwksCalls).toBe(3);
  });

  test("discovery and keys are cached per app: another app with the same provider fetches its own", async () => {
    const { t, op } = await instance();
    expect((await signIn(t, op)).status).toBe(200);
    const other = await createTestApp();
    open.push({ t: other, op: await startTestOp() });
    await readyWithOidc(other, op);
    await invite(other, "ada@example.test");
    expect((await signIn(other, op)).status).toBe(200);
    expect(op.jwksCalls).toBe(2);
  });

  test.each([
    [
      "502 missing_email when neither the ID token nor UserInfo has an e-mail",
      { email: null },
      502,
      { code: "missing_email", message: "The identity provider gave no e-mail address for this account." },
    ],
    [
      "403 user_not_found for an identity nobody invited",
      { email: "stranger@example.test", sub: "sub-stranger" },
      403,
      { code: "user_not_found", message: "No active user has this e-mail address; ask an admin for an invitation." },
    ],
    [
      "502 missing_id_token when the token response has no ID token",
      { omitIdToken: true },
      502,
      { code: "missing_id_token", message: "The identity provider returned no ID token." },
    ],
  ] as [string, IdTokenScenario, number, { code: string; message: string }][])("%s", async (_name, scenario, status, body) => {
    const { t, op } = await instance();
    const res = await signIn(t, op, scenario);
    expect(res.status).toBe(status);
    expect(res.body).toEqual(body);
  });

  test("403 email_not_verified when email_verified is false or absent", async () => {
    const { t, op } = await instance();
    for (const email_verified of [false, null]) {
      const res = await signIn(t, op, { email_verified });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ code: "email_not_verified", message: "The identity provider has not verified this account's e-mail address." });
    }
  });

  test("403 oidc_identity_mismatch when the bound e-mail arrives with another subject", async () => {
    const { t, op } = await instance();
    expect((await signIn(t, op)).status).toBe(200);
    const res = await signIn(t, op, { sub: "sub-mallory" });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ code: "oidc_identity_mismatch", message: "This e-mail address is bound to another identity at the provider." });
  });

  test("400 invalid_state for an unknown state, a reused state, and a state started in another browser", async () => {
    const { t, op } = await instance();
    const unknown = await t.call("POST", "/v1/auth/oidc/callback", { body: { code: "c", state: "never-issued" } });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({ code: "invalid_state", message: "This sign-in is unknown or was already used; start again." });

    // Login CSRF (RFC 9700 §2.1.1): the attacker's code and state, posted from the victim's browser.
    const attacker = await start(t);
    const { code, state } = op.authorize(attacker.authorization_url);
    const victimCookie = (await start(t)).cookie;
    for (const headers of [{}, { cookie: victimCookie }] as Record<string, string>[]) {
      const res = await t.call("POST", "/v1/auth/oidc/callback", { body: { code, state }, headers });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ code: "invalid_state", message: expect.any(String) });
    }
    expect(op.tokenCalls).toBe(0);

    const started = await start(t);
    const grant = op.authorize(started.authorization_url);
    expect((await t.call("POST", "/v1/auth/oidc/callback", { body: grant, headers: { cookie: started.cookie } })).status).toBe(400); // extra fields refused
    const first = await t.call("POST", "/v1/auth/oidc/callback", { body: { code: grant.code, state: grant.state }, headers: { cookie: started.cookie } });
    expect(first.status).toBe(200);
    const replay = await t.call("POST", "/v1/auth/oidc/callback", { body: { code: grant.code, state: grant.state }, headers: { cookie: started.cookie } });
    expect(replay.body).toEqual({ code: "invalid_state", message: "This sign-in is unknown or was already used; start again." });
  });

  test("400 auth_expired after 10 minutes", async () => {
    const { t, op } = await instance();
    const res = await callbackAfter(t, op, () => t.clock.advance(600));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: "auth_expired", message: "This sign-in is older than 10 minutes; start again." });
    expect(op.tokenCalls).toBe(0);
  });

  test("500 decryption_error when the sealed client secret cannot be opened, and the provider is never called", async () => {
    const { t, op } = await instance();
    // Corrupt one character of the ciphertext: AES-GCM's tag no longer verifies.
    const res = await callbackAfter(t, op, () =>
      t.db.execute("UPDATE oidc_settings SET client_secret_sealed = substr(client_secret_sealed, 1, length(client_secret_sealed) - 2) || 'AA'"),
    );
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ code: "decryption_error", message: "The stored client secret cannot be decrypted with this instance's key; set it again." });
    expect(op.tokenCalls).toBe(0);
  });

  test("502 token_exchange_error when the provider refuses the code", async () => {
    const { t, op } = await instance();
    const res = await signIn(t, op, { tokenError: true });
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ code: "token_exchange_error", message: "The identity provider refused the authorization code: invalid_grant." });
    expect(op.tokenCalls).toBe(1);
  });

  test("502 oidc_discovery_error at the callback when discovery fails there (another process, cold cache)", async () => {
    const t = await createTestApp();
    const op = await startTestOp({ nowSeconds: () => t.clock.now() });
    open.push({ t, op });
    await readyWithOidc(t, op);
    const started = await start(t);
    const { code, state } = op.authorize(started.authorization_url);
    // Point the settings at a second issuer whose discovery is broken (its cache is cold).
    const broken = await startTestOp();
    broken.discoveryBroken = true;
    try {
      await t.db.execute({ sql: "UPDATE oidc_settings SET issuer = ?", args: [broken.issuer] });
      const res = await t.call("POST", "/v1/auth/oidc/callback", { body: { code, state }, headers: { cookie: started.cookie } });
      expect(res.status).toBe(502);
      expect(res.body).toEqual({ code: "oidc_discovery_error", message: "The identity provider's discovery document could not be fetched or is not valid." });
    } finally {
      broken.stop();
    }
  });

  test.each([
    [
      "500 store_error when the pending authorizations cannot be read (table dropped in this test database)",
      "oidc_pending",
      { code: "store_error", message: "A database operation failed during sign-in; try again." },
    ],
    [
      "500 session_error when the session cannot be written (sessions table dropped in this test database)",
      "sessions",
      { code: "session_error", message: "The session could not be created; try again." },
    ],
  ])("%s", async (_name, table, body) => {
    const { t, op } = await instance();
    const res = await callbackAfter(t, op, () => t.db.execute(`DROP TABLE ${table}`));
    expect(res.status).toBe(500);
    expect(res.body).toEqual(body);
  });

  test("409 setup_incomplete before the instance is ready", async () => {
    const t = await createTestApp();
    try {
      const res = await t.call("POST", "/v1/auth/oidc/callback", { body: { code: "c", state: "s" } });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ code: "setup_incomplete", message: "Setup is not complete; finish it before signing in." });
    } finally {
      t.close();
    }
  });
});

describe("OIDC settings", () => {
  test("setup/complete refuses until the provider is configured; admins read the settings without the secret", async () => {
    const t = await createTestApp();
    const op = await startTestOp();
    open.push({ t, op });
    const token = await setupToken(t);
    await t.call("POST", "/v1/setup/preferences", { token, body: { runtime_mode: "remote", remote_auth_mode: "oidc" } });
    await t.call("POST", "/v1/setup/owner", { token, body: { email: "owner@example.test" } });
    const early = await t.call("POST", "/v1/setup/complete", { token });
    expect(early.status).toBe(409);
    expect(early.body).toEqual({ code: "remote_auth_not_configured", message: "Configure the identity provider with PUT /v1/setup/oidc first." });
    const bad = await t.call("PUT", "/v1/setup/oidc", {
      token,
      body: { issuer: "http://idp.example.test", client_id: "c", client_secret: "s", redirect_uris: [STANDARD_CALLBACK] },
    });
    expect(bad.status).toBe(400);
    const put = await t.call("PUT", "/v1/setup/oidc", {
      token,
      body: { issuer: op.issuer, client_id: "c", client_secret: "very-secret-value", redirect_uris: [STANDARD_CALLBACK] },
    });
    expect(put.body).toEqual({
      issuer: op.issuer,
      client_id: "c",
      client_secret_set: true,
      scopes: ["openid", "email", "profile"],
      redirect_uris: [STANDARD_CALLBACK],
      id_token_algs: ["RS256", "PS256", "ES256", "EdDSA"],
      updated_at: t.clock.now(),
    });
    expect((await t.call("POST", "/v1/setup/complete", { token })).status).toBe(200);
    const sealed = String((await t.db.execute("SELECT client_secret_sealed FROM oidc_settings")).rows[0]!.client_secret_sealed);
    expect(sealed).toStartWith("v1.");
    expect(sealed).not.toContain("very-secret-value");
  });
});
