// Sessions (docs/api.md "Authentication"): 24 hours, hashed, ended by logout.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { bootstrapOwner, createTestApp, type TestApp } from "../helpers/app.ts";
import { hashSecret, parseSecret } from "../../lib/auth/secrets.ts";

let t: TestApp;
beforeEach(async () => (t = await createTestApp()));
afterEach(() => t.close());

describe("logout", () => {
  test("ends the session: {ok: true}, then the token is 401 invalid_session", async () => {
    const token = await bootstrapOwner(t);
    const res = await t.call("POST", "/v1/auth/logout", { token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    const again = await t.call("POST", "/v1/auth/logout", { token });
    expect(again.status).toBe(401);
    expect(again.body).toEqual({ code: "invalid_session", message: "The session is invalid or has expired; sign in again." });
  });

  test("without Authorization it is 401 missing_auth", async () => {
    const res = await t.call("POST", "/v1/auth/logout");
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ code: "missing_auth", message: "This endpoint takes a user session as 'Authorization: Bearer <token>'; the request has none." });
  });

  test("an API token cannot log out (it is revoked instead)", async () => {
    const owner = await bootstrapOwner(t);
    const created = await t.call("POST", "/v1/api-tokens", { token: owner, body: { name: "x", role: "owner" } });
    const res = await t.call("POST", "/v1/auth/logout", { token: created.body.token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      code: "wrong_credential",
      message:
        "An API token (roost_pat_…) cannot call session-only endpoints (such as logout): this endpoint takes a user session. API tokens are revoked with DELETE /v1/api-tokens/{token_id}.",
    });
  });
});

describe("lifetime and storage", () => {
  test("a session works for 24 hours and not a second longer", async () => {
    const token = await bootstrapOwner(t);
    t.clock.advance(24 * 3600 - 1);
    expect((await t.call("GET", "/v1/users/me", { token })).status).toBe(200);
    t.clock.advance(1);
    const res = await t.call("GET", "/v1/users/me", { token });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("invalid_session");
  });

  test("only a SHA-256 of the secret is stored, never the token", async () => {
    const token = await bootstrapOwner(t);
    const parsed = parseSecret("sess", token)!;
    const rows = await t.db.execute("SELECT * FROM sessions");
    expect(JSON.stringify(rows.rows)).not.toContain(parsed.secret);
    expect(rows.rows[0]!.secret_hash).toBe(hashSecret(parsed.secret));
  });

  test("an Authorization header of another scheme is 401 missing_auth, saying so", async () => {
    const res = await t.call("GET", "/v1/users/me", { headers: { authorization: "Basic abc" } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      code: "missing_auth",
      message:
        "This endpoint takes a user session or an API token as 'Authorization: Bearer <token>'; the Authorization header does not use the Bearer scheme.",
    });
  });
});
