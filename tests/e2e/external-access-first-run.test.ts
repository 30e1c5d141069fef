// External Access first run end to end on a real daemon (README "External Access"), and the
// recovery flow through the real Unix management socket: setup token from the 0600 file →
// preferences → sign-in configuration → owner → complete; then a locked-out operator on the host
// mints a recovery capability with `roost recover` and signs in locally with it, once.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { http, startDaemon, type Daemon } from "../helpers/daemon.ts";

let daemon: Daemon;
beforeAll(async () => (daemon = await startDaemon()));
afterAll(async () => daemon?.stop());

describe("External Access first run", () => {
  let setupToken = "";

  test("only the holder of the setup token from the data dir can choose the modes", async () => {
    setupToken = readFileSync(join(daemon.dataDir, "setup-token"), "utf8").trim();
    const anonymous = await http(daemon.url, "POST", "/v1/setup/preferences", { body: { runtime_mode: "remote", remote_auth_mode: "trusted_proxy" } });
    expect(anonymous.status).toBe(401);
    const prefs = await http(daemon.url, "POST", "/v1/setup/preferences", {
      token: setupToken,
      body: { runtime_mode: "remote", remote_auth_mode: "trusted_proxy" },
    });
    expect(prefs.status).toBe(200);
    expect(prefs.body).toMatchObject({ runtime_mode: "remote", remote_auth_mode: "trusted_proxy" });
    // While setup is incomplete in External Access mode, neither local login nor sign-in works.
    expect((await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "ops@example.test" } })).body.code).toBe("mode_restricted");
    expect((await http(daemon.url, "POST", "/v1/auth/trusted-proxy/login")).body.code).toBe("setup_incomplete");
  });

  test("owner, sign-in configuration and completion, in that order, each with the setup token", async () => {
    const owner = await http(daemon.url, "POST", "/v1/setup/owner", { token: setupToken, body: { email: "ops@example.test" } });
    expect(owner.status).toBe(201);
    const early = await http(daemon.url, "POST", "/v1/setup/complete", { token: setupToken });
    expect(early.status).toBe(409);
    expect(early.body.code).toBe("remote_auth_not_configured");
    const proxy = await http(daemon.url, "PUT", "/v1/setup/trusted-proxy", {
      token: setupToken,
      body: { trusted_peers: ["127.0.0.2"], shared_secret: "a-long-shared-proxy-secret" },
    });
    expect(proxy.status).toBe(200);
    const done = await http(daemon.url, "POST", "/v1/setup/complete", { token: setupToken });
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ state: "ready", runtime_mode: "remote", remote_auth_mode: "trusted_proxy" });
    expect(() => readFileSync(join(daemon.dataDir, "setup-token"))).toThrow();
    expect((await http(daemon.url, "POST", "/v1/setup/preferences", { token: setupToken, body: { runtime_mode: "local" } })).body.code).toBe(
      "setup_already_complete",
    );
    expect((await daemon.cli(["recover", "setup-token"])).code).toBe(1);
  });

  test("loopback alone is not enough in Ready External Access mode", async () => {
    const res = await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "ops@example.test" } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("recovery_capability_required");
  });

  test("roost recover mints a capability over the Unix socket; it signs the owner in once", async () => {
    const minted = await daemon.cli(["recover"]);
    expect(minted.code).toBe(0);
    const capability = minted.stdout.trim();
    expect(capability).toMatch(/^roost_rcv_[0-9A-Za-z]{58}$/);
    expect(JSON.stringify(daemon.logs)).not.toContain(capability);
    const login = await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "ops@example.test", recovery_capability: capability } });
    expect(login.status).toBe(200);
    expect(login.body.user).toMatchObject({ email: "ops@example.test", role: "owner" });
    const again = await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "ops@example.test", recovery_capability: capability } });
    expect(again.body.code).toBe("recovery_capability_invalid");
  });

  test("the management socket is the only way to a capability: TCP has no such endpoint", async () => {
    for (const path of ["/recovery-capabilities", "/v1/recovery-capabilities"]) {
      const res = await http(daemon.url, "POST", path, { headers: { "x-forwarded-for": "127.0.0.1" } });
      expect(res.status).toBe(404);
    }
  });
});
