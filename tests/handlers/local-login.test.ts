// POST /v1/auth/local/login (docs/api.md "Authentication") and the recovery capability.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { bootstrapOwner, createTestApp, expectError, loginCapability, setupToken, type TestApp } from "../helpers/app.ts";
import { mintRecoveryCapability } from "../../lib/auth/one-time-credentials.ts";

let t: TestApp;
beforeEach(async () => (t = await createTestApp()));
afterEach(() => t.close());

describe("loopback is decided by the socket peer", () => {
  test.each([["203.0.113.7"], ["10.0.0.2"], ["::ffff:192.0.2.1"], ["2001:db8::1"], [null]])(
    "peer %p is refused with 403 local_login_loopback_required",
    async (peer) => {
      const res = await t.call("POST", "/v1/auth/local/login", { peer, body: { email: "a@example.test" } });
      expectError(res, 403, { code: "local_login_loopback_required", message: "Local login is accepted only from this machine's loopback." });
    },
  );

  test("forwarding headers claiming loopback do not help a remote peer", async () => {
    const res = await t.call("POST", "/v1/auth/local/login", {
      peer: "198.51.100.4",
      headers: { "x-forwarded-for": "127.0.0.1", forwarded: "for=127.0.0.1", "x-real-ip": "127.0.0.1" },
      body: { email: "a@example.test" },
    });
    expect(res.body.code).toBe("local_login_loopback_required");
  });

  test.each([["127.0.0.1"], ["127.8.9.10"], ["::1"], ["::ffff:127.0.0.1"]])("peer %p is loopback", async (peer) => {
    const res = await t.call("POST", "/v1/auth/local/login", { peer, body: { email: "a@example.test" } });
    expect(res.status).toBe(200);
  });
});

describe("a browser page cannot use the victim's loopback (CSRF, DNS rebinding)", () => {
  test("a non-loopback Host is refused", async () => {
    const res = await t.call("POST", "/v1/auth/local/login", { headers: { host: "attacker.example:8080" }, body: { email: "a@example.test" } });
    expectError(res, 403, { code: "local_login_host_not_allowed", message: "Local login needs a loopback Host (localhost, 127.0.0.1 or [::1])." });
  });

  test("a foreign Origin is refused; a loopback one is accepted", async () => {
    const bad = await t.call("POST", "/v1/auth/local/login", { headers: { origin: "https://evil.example" }, body: { email: "a@example.test" } });
    expect(bad.status).toBe(403);
    expect(bad.body.code).toBe("local_login_origin_not_allowed");
    const good = await t.call("POST", "/v1/auth/local/login", { headers: { origin: "http://localhost:8080" }, body: { email: "a@example.test" } });
    expect(good.status).toBe(200);
  });

  test("a form post (text/plain, the CSRF content type) is refused with 415", async () => {
    const res = await t.call("POST", "/v1/auth/local/login", { raw: '{"email":"a@example.test"}', contentType: "text/plain" });
    expect(res.status).toBe(415);
    expect(res.body.code).toBe("unsupported_media_type");
  });
});

describe("choosing the user (Ready, Local Only)", () => {
  test("without an e-mail, the only active user is signed in", async () => {
    await bootstrapOwner(t, "solo@example.test");
    const res = await t.call("POST", "/v1/auth/local/login", { body: { recovery_capability: await loginCapability(t) } });
    expect(res.status).toBe(200);
    expect(res.body.user.email).toBe("solo@example.test");
  });

  test("with several active users, a missing e-mail is 400 email_required", async () => {
    const owner = await bootstrapOwner(t);
    await t.call("POST", "/v1/users", { token: owner, body: { email: "dev@example.test", role: "developer" } });
    const res = await t.call("POST", "/v1/auth/local/login", { body: { recovery_capability: await loginCapability(t) } });
    expectError(res, 400, { code: "email_required", message: "Several users exist: send the e-mail address to sign in as." });
  });

  test("an unknown or deactivated e-mail is 403 user_not_found", async () => {
    const owner = await bootstrapOwner(t);
    const unknown = await t.call("POST", "/v1/auth/local/login", { body: { email: "nobody@example.test", recovery_capability: await loginCapability(t) } });
    expectError(unknown, 403, { code: "user_not_found", message: "No active user has that e-mail address; ask an admin for an invitation." });

    const invited = await t.call("POST", "/v1/users", { token: owner, body: { email: "gone@example.test", role: "developer" } });
    await t.call("DELETE", `/v1/users/${invited.body.user.id}`, { token: owner });
    const gone = await t.call("POST", "/v1/auth/local/login", { body: { email: "gone@example.test", recovery_capability: await loginCapability(t) } });
    expect(gone.body.code).toBe("user_not_found");
  });

  test("every login is a new session, and a session presented with it ends", async () => {
    const first = await bootstrapOwner(t);
    const second = await t.call("POST", "/v1/auth/local/login", { token: first, body: { recovery_capability: await loginCapability(t) } });
    expect(second.body.session_token).not.toBe(first);
    const old = await t.call("GET", "/v1/users/me", { token: first });
    expect(old.status).toBe(401);
    expect(old.body.code).toBe("invalid_session");
  });
});

describe("Ready Local Only: loopback alone signs nobody in (build code on a runner is loopback too)", () => {
  const sessions = async () => Number((await t.db.execute("SELECT count(*) AS n FROM sessions")).rows[0]!.n);

  test("without a capability: 403 local_capability_required, and no session is created", async () => {
    await bootstrapOwner(t);
    const before = await sessions();
    const res = await t.call("POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } });
    expectError(res, 403, {
      code: "local_capability_required",
      message: "Setup is complete, so local login needs a one-time capability: run `roost login` on this host as the daemon's user.",
    });
    expect(await sessions()).toBe(before);
  });

  test("a capability signs in once; reused, it is 403 recovery_capability_invalid", async () => {
    await bootstrapOwner(t);
    const capability = await loginCapability(t);
    const ok = await t.call("POST", "/v1/auth/local/login", { body: { email: "owner@example.test", recovery_capability: capability } });
    expect(ok.status).toBe(200);
    expect(ok.body.user).toMatchObject({ email: "owner@example.test", role: "owner" });
    const reused = await t.call("POST", "/v1/auth/local/login", { body: { email: "owner@example.test", recovery_capability: capability } });
    expectError(reused, 403, {
      code: "recovery_capability_invalid",
      message: "The capability is unknown, expired or already used; run `roost login` on this host for a new one.",
    });
  });

  test("a sign-in refused for its e-mail leaves the capability unspent", async () => {
    await bootstrapOwner(t);
    const capability = await loginCapability(t);
    const refused = await t.call("POST", "/v1/auth/local/login", { body: { email: "nobody@example.test", recovery_capability: capability } });
    expectError(refused, 403, { code: "user_not_found", message: "No active user has that e-mail address; ask an admin for an invitation." });
    const ok = await t.call("POST", "/v1/auth/local/login", { body: { email: "owner@example.test", recovery_capability: capability } });
    expect(ok.status).toBe(200);
  });

  test("a made-up capability is 403 recovery_capability_invalid", async () => {
    await bootstrapOwner(t);
    const res = await t.call("POST", "/v1/auth/local/login", { body: { email: "owner@example.test", recovery_capability: "roost_rcv_guess" } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("recovery_capability_invalid");
  });
});

describe("Ready External Access: local login needs a recovery capability", () => {
  const loginWith = (capability: string) => t.call("POST", "/v1/auth/local/login", { body: { recovery_capability: capability } });

  async function readyRemote(): Promise<void> {
    const token = await setupToken(t);
    await t.call("POST", "/v1/setup/preferences", { token, body: { runtime_mode: "remote", remote_auth_mode: "oidc" } });
    await t.call("POST", "/v1/setup/owner", { token, body: { email: "owner@example.test" } });
    // Completing needs the remote auth mode configured; that belongs to the sign-in setup, so mark ready directly here.
    await t.db.execute("UPDATE instance SET state = 'ready', ready_at = 1 WHERE id = 1");
  }

  test("loopback alone is 403 recovery_capability_required", async () => {
    await readyRemote();
    const res = await t.call("POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } });
    expectError(res, 403, {
      code: "recovery_capability_required",
      message: "In External Access mode, local login needs a recovery capability from `roost recover`.",
    });
  });

  test("a capability works once, then is 403 recovery_capability_invalid", async () => {
    await readyRemote();
    const { token } = await mintRecoveryCapability(t.db, t.clock.now());
    const ok = await loginWith(token);
    expect(ok.status).toBe(200);
    expect(ok.body.user.email).toBe("owner@example.test");
    const reused = await loginWith(token);
    expectError(reused, 403, {
      code: "recovery_capability_invalid",
      message: "The recovery capability is unknown, expired or already used; mint a new one with `roost recover`.",
    });
  });

  test("a capability expires after five minutes", async () => {
    await readyRemote();
    const { token } = await mintRecoveryCapability(t.db, t.clock.now());
    t.clock.advance(5 * 60);
    const res = await loginWith(token);
    expect(res.body.code).toBe("recovery_capability_invalid");
  });

  test("two concurrent uses of one capability: exactly one session", async () => {
    await readyRemote();
    const { token } = await mintRecoveryCapability(t.db, t.clock.now());
    const results = await Promise.all(Array.from({ length: 5 }, () => loginWith(token)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
  });

  test("the capability is still loopback-only", async () => {
    await readyRemote();
    const { token } = await mintRecoveryCapability(t.db, t.clock.now());
    const res = await t.call("POST", "/v1/auth/local/login", { peer: "198.51.100.1", body: { recovery_capability: token } });
    expect(res.body.code).toBe("local_login_loopback_required");
  });
});
