// A 401 says what credential the endpoint takes and what it received, from the credential's prefix
// alone (never whether a token is valid), and every 401 carries WWW-Authenticate (RFC 9110
// section 15.5.2; Bearer challenges per RFC 6750 section 3).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../helpers/app.ts";

let t: TestApp;
let owner: string;
let firstLogin: any;
let runner: { id: string; token: string };
beforeAll(async () => {
  t = await createTestApp({ ROOST_METRICS_TOKEN: "metrics-secret-0123456789" });
  firstLogin = (await t.call("POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } })).body;
  owner = firstLogin.session_token;
  const created = await t.call("POST", "/v1/runners", { token: owner, body: { name: "mac-mini" } });
  runner = { id: created.body.runner.id, token: created.body.token };
});
afterAll(() => t.close());

const forged = (kind: string) => `roost_${kind}_${"A".repeat(58)}`;

describe("a credential of the wrong kind is named, whether or not it is valid", () => {
  test("a runner token cannot call user endpoints", async () => {
    const real = await t.call("GET", "/v1/users/me", { token: runner.token });
    const invented = await t.call("GET", "/v1/users/me", { token: forged("rt") });
    const message = "A runner token (roost_rt_…) cannot call user endpoints: this endpoint takes a user session or an API token.";
    for (const res of [real, invented]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ code: "wrong_credential", message });
      expect(res.headers.get("www-authenticate")).toBe(
        `Bearer realm="roost", error="invalid_token", error_description="A runner token (roost_rt_...) cannot call user endpoints: this endpoint takes a user session or an API token."`,
      );
    }
  });

  test("a user session cannot call the runner protocol", async () => {
    const res = await t.call("POST", `/v1/runners/${runner.id}/heartbeat`, { token: owner, body: {} });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      code: "wrong_credential",
      message: "A user session token (roost_sess_…) cannot call runner protocol endpoints: this endpoint takes the runner's own token.",
    });
  });

  test("a string that is not a Roost credential is told so", async () => {
    const res = await t.call("GET", "/v1/projects", { token: "ghp_0123456789abcdef" });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      code: "wrong_credential",
      message:
        "A bearer value that is not a Roost credential (those start with roost_) cannot call user endpoints: this endpoint takes a user session or an API token.",
    });
  });

  test("a session token of the right kind that is not valid keeps the one invalid_session answer", async () => {
    const res = await t.call("GET", "/v1/users/me", { token: forged("sess") });
    expect(res.body).toEqual({ code: "invalid_session", message: "The session is invalid or has expired; sign in again." });
    expect(res.headers.get("www-authenticate")).toBe(
      `Bearer realm="roost", error="invalid_token", error_description="The session is invalid or has expired; sign in again."`,
    );
  });
});

describe("every 401 carries WWW-Authenticate", () => {
  test.each([
    ["GET", "/v1/users/me", {}, 'Bearer realm="roost"'],
    ["GET", "/v1/users/me", { token: forged("pat") }, 'Bearer realm="roost", error="invalid_token", error_description="The API token is not valid."'],
    ["POST", "/v1/auth/logout", { token: forged("rt") }, 'Bearer realm="roost", error="invalid_token"'],
    ["GET", "/v1/builds/b/logs/stream", {}, 'Bearer realm="roost"'],
    ["GET", "/v1/builds/b/logs/stream?token=" + forged("st"), {}, 'Bearer realm="roost", error="invalid_token"'],
    ["GET", "/metrics", { token: "nope" }, 'Bearer realm="roost", error="invalid_token", error_description="The metrics token is not valid."'],
    [
      "POST",
      "/v1/webhooks/github",
      { body: {}, headers: { "x-github-event": "push", "x-github-delivery": "d1" } },
      'HMAC-SHA256 realm="roost", header="X-Hub-Signature-256"',
    ],
    ["POST", "/v1/webhooks/gitlab", { body: {}, headers: { "x-gitlab-event": "Push Hook" } }, 'Token realm="roost", header="X-Gitlab-Token"'],
  ] as const)("%s %s", async (method, path, options, challenge) => {
    const res = await t.call(method, path, options);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")!.startsWith(challenge)).toBe(true);
  });
});

describe("one user shape", () => {
  test("the session result's user has the same id as /v1/users/me (user_id kept beside it)", async () => {
    const me = await t.call("GET", "/v1/users/me", { token: owner });
    expect(firstLogin.user).toEqual({
      id: me.body.user.id,
      user_id: me.body.user.id,
      email: "owner@example.test",
      oidc_subject: "",
      role: "owner",
      avatar_url: "",
    });
  });
});
