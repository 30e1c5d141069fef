// First-run setup (README "First run"; docs/api.md "Setup").
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { setupToken, testAppPer } from "../helpers/app.ts";
import { setupTokenPath, writeSetupTokenFile } from "../../lib/setup/token-file.ts";

const t = testAppPer("test");

describe("the public status endpoint", () => {
  test("a fresh instance is incomplete, Local Only by default, and expects a local login", async () => {
    const res = await t.call("GET", "/v1/setup/status", { peer: "203.0.113.9" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      state: "incomplete",
      runtime_mode: "local",
      runtime_mode_chosen: false,
      remote_auth_mode: null,
      owner_exists: false,
      next_step: "local_login",
    });
  });
});

describe("Local Only first run", () => {
  test("the first loopback login creates the owner, makes the instance ready and returns a session", async () => {
    const res = await t.call("POST", "/v1/auth/local/login", { body: { email: "Ada@Example.test" } });
    expect(res.status).toBe(200);
    expect(res.body.user).toEqual({
      id: expect.any(String),
      user_id: expect.any(String),
      email: "ada@example.test",
      oidc_subject: "",
      role: "owner",
      avatar_url: "",
    });
    expect(res.body.session_token).toMatch(/^roost_sess_[0-9A-Za-z]{58}$/);
    expect(res.body.expires_at).toBe(t.clock.now() + 24 * 3600);
    const status = await t.call("GET", "/v1/setup/status");
    expect(status.body).toMatchObject({ state: "ready", runtime_mode: "local", owner_exists: true, next_step: "sign_in" });
  });

  test("the bootstrap login needs an e-mail because no user exists yet", async () => {
    const res = await t.call("POST", "/v1/auth/local/login", { body: {} });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: "email_required", message: "No owner exists yet: send the e-mail address of the owner to create." });
  });

  test("the bootstrap consumes the setup token and removes its file", async () => {
    const token = await setupToken(t);
    await writeSetupTokenFile(t.dataDir, token);
    await t.call("POST", "/v1/auth/local/login", { body: { email: "ada@example.test" } });
    expect(existsSync(setupTokenPath(t.dataDir))).toBe(false);
    const res = await t.call("POST", "/v1/setup/preferences", { token, body: { runtime_mode: "remote", remote_auth_mode: "oidc" } });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe("setup_already_complete");
  });
});

describe("External Access first run", () => {
  test("preferences, owner, complete: each step needs the setup token, then the instance is ready", async () => {
    const token = await setupToken(t);
    const prefs = await t.call("POST", "/v1/setup/preferences", { token, body: { runtime_mode: "remote", remote_auth_mode: "trusted_proxy" } });
    expect(prefs.status).toBe(200);
    expect(prefs.body).toEqual({ runtime_mode: "remote", remote_auth_mode: "trusted_proxy", session_expires_at: t.clock.now() + 24 * 3600 });

    const early = await t.call("POST", "/v1/setup/complete", { token });
    expect(early.status).toBe(409);
    expect(early.body.code).toBe("owner_required");

    const owner = await t.call("POST", "/v1/setup/owner", { token, body: { email: "Grace@Example.test" } });
    expect(owner.status).toBe(201);
    expect(owner.body.user).toMatchObject({ email: "grace@example.test", role: "owner", active: true });

    const again = await t.call("POST", "/v1/setup/owner", { token, body: { email: "other@example.test" } });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("owner_exists");

    expect((await t.call("GET", "/v1/setup/status")).body.next_step).toBe("configure_trusted_proxy");
  });

  test("an owner created before the sign-in method is configured: the next step is the configuration", async () => {
    const token = await setupToken(t);
    await t.call("POST", "/v1/setup/preferences", { token, body: { runtime_mode: "remote", remote_auth_mode: "trusted_proxy" } });
    expect((await t.call("PUT", "/v1/setup/trusted-proxy", { token, body: { trusted_peers: ["10.0.0.5"] } })).status).toBe(200);
    expect((await t.call("GET", "/v1/setup/status")).body.next_step).toBe("owner");
  });

  test.each([
    ["oidc", "configure_oidc"],
    ["trusted_proxy", "configure_trusted_proxy"],
  ] as const)("with %s, status names each real next step until complete", async (remoteAuth, configure) => {
    const next = async () => (await t.call("GET", "/v1/setup/status")).body.next_step;
    const token = await setupToken(t);
    expect(await next()).toBe("local_login");
    await t.call("POST", "/v1/setup/preferences", { token, body: { runtime_mode: "remote", remote_auth_mode: remoteAuth } });
    expect(await next()).toBe(configure);
    await t.call("POST", "/v1/setup/owner", { token, body: { email: "grace@example.test" } });
    // With the owner created, the sign-in method is still what "complete" would refuse for.
    expect(await next()).toBe(configure);
    expect((await t.call("POST", "/v1/setup/complete", { token })).body.code).toBe("remote_auth_not_configured");
    if (remoteAuth === "trusted_proxy") {
      expect((await t.call("PUT", "/v1/setup/trusted-proxy", { token, body: { trusted_peers: ["10.0.0.5"] } })).status).toBe(200);
    } else {
      await t.db.execute({
        sql: "INSERT INTO oidc_settings (id, issuer, client_id, client_secret_sealed, scopes, redirect_uris, id_token_algs, updated_at) VALUES (1, 'https://idp.example.test', 'c', 'x', '[]', '[]', '[]', 0)",
      });
    }
    expect(await next()).toBe("complete");
    expect((await t.call("POST", "/v1/setup/complete", { token })).status).toBe(200);
    expect(await next()).toBe("sign_in");
  });

  test("local login while setup is incomplete in remote mode is 403 mode_restricted", async () => {
    const token = await setupToken(t);
    await t.call("POST", "/v1/setup/preferences", { token, body: { runtime_mode: "remote", remote_auth_mode: "oidc" } });
    const res = await t.call("POST", "/v1/auth/local/login", { body: { email: "ada@example.test" } });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ code: "mode_restricted", message: "Setup is incomplete in External Access mode; finish it with the setup token (README)." });
  });

  test("remote mode needs a remote auth mode", async () => {
    const token = await setupToken(t);
    const res = await t.call("POST", "/v1/setup/preferences", { token, body: { runtime_mode: "remote" } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_request");
    expect(res.body.details).toEqual([{ path: "body.remote_auth_mode", message: "remote_auth_mode is required when runtime_mode is remote" }]);
  });
});

describe("the setup credential", () => {
  test("no token is 401 missing_auth, a wrong or expired one 401 invalid_setup_token, and nothing is stored", async () => {
    const none = await t.call("POST", "/v1/setup/preferences", { body: { runtime_mode: "remote", remote_auth_mode: "oidc" } });
    expect(none.status).toBe(401);
    expect(none.body.code).toBe("missing_auth");

    const forged = await t.call("POST", "/v1/setup/preferences", {
      token: "roost_setup_" + "A".repeat(58),
      body: { runtime_mode: "remote", remote_auth_mode: "oidc" },
    });
    expect(forged.status).toBe(401);
    expect(forged.body.code).toBe("invalid_setup_token");

    const token = await setupToken(t);
    t.clock.advance(24 * 3600 + 1);
    const expired = await t.call("POST", "/v1/setup/preferences", { token, body: { runtime_mode: "remote", remote_auth_mode: "oidc" } });
    expect(expired.body.code).toBe("invalid_setup_token");

    expect((await t.call("GET", "/v1/setup/status")).body.runtime_mode_chosen).toBe(false);
  });

  test("a session token is not a setup token", async () => {
    const login = await t.call("POST", "/v1/auth/local/login", { body: { email: "a@example.test" } });
    const res = await t.call("POST", "/v1/setup/owner", { token: login.body.session_token, body: { email: "b@example.test" } });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ code: "setup_already_complete", message: "Setup is complete; setup endpoints accept no more changes." });
  });

  test("after ready, every setup endpoint refuses changes with 409 setup_already_complete", async () => {
    const token = await setupToken(t);
    await t.call("POST", "/v1/setup/owner", { token, body: { email: "o@example.test" } });
    expect((await t.call("POST", "/v1/setup/complete", { token })).status).toBe(200);
    for (const [path, body] of [
      ["/v1/setup/preferences", { runtime_mode: "local" }],
      ["/v1/setup/owner", { email: "x@example.test" }],
      ["/v1/setup/complete", undefined],
    ] as const) {
      const res = await t.call("POST", path, { token, body });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe("setup_already_complete");
    }
  });
});
