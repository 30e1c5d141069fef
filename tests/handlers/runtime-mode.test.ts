// PUT /v1/settings/runtime-mode: the owner moves a ready Local Only instance to External Access
// once its sign-in method is configured (and, for OIDC, its discovery document loads), and back.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appWithOwner, userWithRole, type TestApp } from "../helpers/app.ts";

let t: TestApp;
let owner: string;
beforeAll(async () => ({ t, owner } = await appWithOwner()));
afterAll(() => t.close());

const status = async () => (await t.call("GET", "/v1/setup/status")).body;
const switchTo = (body: unknown, token = owner) => t.call("PUT", "/v1/settings/runtime-mode", { token, body });

describe("switching a ready instance between Local Only and External Access", () => {
  test("remote is refused until the chosen sign-in method is configured, and nothing changes", async () => {
    const res = await switchTo({ runtime_mode: "remote", remote_auth_mode: "trusted_proxy" });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      code: "remote_auth_not_configured",
      message: "Configure the trusted proxy first: the Trusted proxy form under Administration → Sign-in, or PUT /v1/settings/trusted-proxy.",
    });
    const oidc = await switchTo({ runtime_mode: "remote", remote_auth_mode: "oidc" });
    expect(oidc.body).toEqual({
      code: "remote_auth_not_configured",
      message: "Configure the identity provider first: the OpenID Connect form under Administration → Sign-in, or PUT /v1/settings/oidc.",
    });
    const none = await switchTo({ runtime_mode: "remote" });
    expect(none.status).toBe(400);
    expect(none.body.details).toEqual([{ path: "body.remote_auth_mode", message: "remote_auth_mode is required: choose oidc or trusted_proxy" }]);
    expect(await status()).toMatchObject({ state: "ready", runtime_mode: "local", remote_auth_mode: null });
  });

  test("OIDC whose discovery document cannot be fetched is 502 oidc_discovery_error, and nothing changes", async () => {
    const put = await t.call("PUT", "/v1/settings/oidc", {
      token: owner,
      body: { issuer: "https://127.0.0.1:9", client_id: "c", client_secret: "s", redirect_uris: ["https://ci.example.test/cb"] },
    });
    expect(put.status).toBe(200);
    const res = await switchTo({ runtime_mode: "remote", remote_auth_mode: "oidc" });
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ code: "oidc_discovery_error", message: "The identity provider's discovery document could not be fetched or is not valid." });
    expect((await status()).runtime_mode).toBe("local");
  });

  test("configured first, then switched: trusted-proxy sign-in works, local login is External Access recovery only; and back", async () => {
    expect((await t.call("PUT", "/v1/settings/trusted-proxy", { token: owner, body: { trusted_peers: ["10.0.0.5"] } })).status).toBe(200);
    const proxyLogin = () => t.call("POST", "/v1/auth/trusted-proxy/login", { peer: "10.0.0.5", headers: { "x-roost-user-email": "owner@example.test" } });
    expect((await proxyLogin()).body.code).toBe("mode_restricted");

    const res = await switchTo({ runtime_mode: "remote", remote_auth_mode: "trusted_proxy" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ runtime_mode: "remote", remote_auth_mode: "trusted_proxy" });
    expect(await status()).toMatchObject({ state: "ready", runtime_mode: "remote", remote_auth_mode: "trusted_proxy", next_step: "sign_in" });
    expect((await proxyLogin()).status).toBe(200);

    const back = await switchTo({ runtime_mode: "local" });
    expect(back.body).toEqual({ runtime_mode: "local", remote_auth_mode: "trusted_proxy" });
    expect((await status()).runtime_mode).toBe("local");
    expect((await proxyLogin()).body.code).toBe("mode_restricted");
    // the stored choice makes the next switch one field
    expect((await switchTo({ runtime_mode: "remote" })).body).toEqual({ runtime_mode: "remote", remote_auth_mode: "trusted_proxy" });
    await switchTo({ runtime_mode: "local" });
  });

  test("only the owner may switch", async () => {
    const admin = await userWithRole(t, owner, "admin");
    const res = await switchTo({ runtime_mode: "local" }, admin.token);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ code: "forbidden", message: "This endpoint needs the owner role or higher." });
  });
});
