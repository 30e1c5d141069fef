// API tokens (docs/api.md "API tokens"; docs/authorization.md "Roles").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appWithOwner, userWithRole, type TestApp } from "../helpers/app.ts";
import { createLogger } from "../../lib/daemon/log.ts";

let t: TestApp;
let owner: string;
beforeAll(async () => ({ t, owner } = await appWithOwner()));
afterAll(() => t.close());

async function create(token: string, body: Record<string, unknown>) {
  return t.call("POST", "/v1/api-tokens", { token, body });
}

describe("creating a token", () => {
  test("returns the plaintext once, with a recognisable prefix, and default 90-day expiry", async () => {
    const res = await create(owner, { name: "  ci deploy  ", role: "developer" });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: "ci deploy",
      prefix: `roost_pat_${res.body.id.slice(0, 8)}`,
      role: "developer",
      created_at: t.clock.now(),
      expires_at: t.clock.now() + 90 * 86400,
      token: expect.stringMatching(/^roost_pat_[0-9A-Za-z]{58}$/),
    });
    expect(res.body.token.startsWith(res.body.prefix)).toBe(true);
    const listed = await t.call("GET", `/v1/api-tokens?q=${res.body.id.slice(0, 8)}`, { token: owner });
    expect(JSON.stringify(listed.body)).not.toContain(res.body.token);
    expect(listed.body.tokens[0]).not.toHaveProperty("token");
  });

  test("the token works as a bearer credential with its role", async () => {
    const created = await create(owner, { name: "reader", role: "developer" });
    const me = await t.call("GET", "/v1/users/me", { token: created.body.token });
    expect(me.status).toBe(200);
    expect(me.body.credential).toEqual({ kind: "api_token", effective_role: "developer", expires_at: created.body.expires_at });
    const admin = await t.call("GET", "/v1/users", { token: created.body.token });
    expect(admin.status).toBe(403);
    expect(admin.body).toEqual({ code: "forbidden", message: "This endpoint needs the admin role or higher." });
  });

  test.each([
    [{ name: "", role: "developer" }, "body.name"],
    [{ name: "x".repeat(101), role: "developer" }, "body.name"],
    [{ name: "bad\u0007name", role: "developer" }, "body.name"],
    [{ name: "ok", role: "superuser" }, "body.role"],
    [{ role: "developer" }, "body.name"],
    [{ name: "ok" }, "body.role"],
    [{ name: "ok", role: "developer", expires_in_days: 366 }, "body.expires_in_days"],
    [{ name: "ok", role: "developer", expires_in_days: 0 }, "body.expires_in_days"],
    [{ name: "ok", role: "developer", extra: 1 }, "body"],
  ])("invalid body %p is 400 at %s", async (body, path) => {
    const res = await create(owner, body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_request");
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  test("nobody creates a token above their own role", async () => {
    const dev = await userWithRole(t, owner, "developer");
    const res = await create(dev.token, { name: "escalate", role: "admin" });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ code: "role_not_allowed", message: "You cannot create a admin token; your role is developer." });
  });

  test("a token never outranks its creator: a demoted creator's owner token acts as developer", async () => {
    const admin = await userWithRole(t, owner, "admin");
    const created = await create(admin.token, { name: "admin-token", role: "admin" });
    await t.call("PATCH", `/v1/users/${admin.id}`, { token: owner, body: { role: "developer" } });
    const me = await t.call("GET", "/v1/users/me", { token: created.body.token });
    expect(me.body.credential.effective_role).toBe("developer");
    expect((await t.call("GET", "/v1/users", { token: created.body.token })).status).toBe(403);
  });

  test("a token never outlives its creator: deactivation stops it", async () => {
    const dev = await userWithRole(t, owner, "developer");
    const created = await create(dev.token, { name: "doomed", role: "developer" });
    await t.call("DELETE", `/v1/users/${dev.id}`, { token: owner });
    const res = await t.call("GET", "/v1/api-tokens", { token: created.body.token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ code: "invalid_token", message: "The API token is not valid." });
  });

  test("a token minted with a token cannot outlive it", async () => {
    const parent = await create(owner, { name: "parent", role: "owner", expires_in_days: 2 });
    const child = await create(parent.body.token, { name: "child", role: "developer", expires_in_days: 30 });
    expect(child.status).toBe(201);
    expect(child.body.expires_at).toBe(parent.body.expires_at);
  });
});

describe("listing tokens", () => {
  test("admins and owners see all tokens, others only their own", async () => {
    const dev = await userWithRole(t, owner, "developer");
    await create(dev.token, { name: "dev-own", role: "developer" });
    const mine = await t.call("GET", "/v1/api-tokens?limit=200", { token: dev.token });
    expect(mine.status).toBe(200);
    expect(mine.body.tokens.every((tok: { created_by: string }) => tok.created_by === dev.id)).toBe(true);
    expect(mine.body.total).toBe(1);
    const all = await t.call("GET", "/v1/api-tokens?limit=200", { token: owner });
    expect(all.body.tokens.some((tok: { created_by: string }) => tok.created_by === dev.id)).toBe(true);
    expect(all.body.total).toBeGreaterThan(mine.body.total);
  });

  test("every listed field is present, with the creator's e-mail", async () => {
    const dev = await userWithRole(t, owner, "developer");
    const created = await create(dev.token, { name: "shape", role: "developer" });
    const res = await t.call("GET", "/v1/api-tokens", { token: dev.token });
    expect(res.body.tokens[0]).toEqual({
      id: created.body.id,
      name: "shape",
      prefix: created.body.prefix,
      role: "developer",
      created_at: t.clock.now(),
      created_by: dev.id,
      created_by_email: dev.email,
      expires_at: created.body.expires_at,
      last_used_at: null,
      is_expired: false,
      is_revoked: false,
    });
  });

  test("q searches names; sort and direction order the page; total counts all matches", async () => {
    const dev = await userWithRole(t, owner, "developer");
    for (const name of ["beta-search", "alpha-search", "gamma-search"]) await create(dev.token, { name, role: "developer" });
    const res = await t.call("GET", "/v1/api-tokens?q=SEARCH&sort=name&direction=asc&limit=2", { token: dev.token });
    expect(res.body.tokens.map((x: { name: string }) => x.name)).toEqual(["alpha-search", "beta-search"]);
    expect(res.body.total).toBe(3);
    const page2 = await t.call("GET", "/v1/api-tokens?q=search&sort=name&direction=asc&limit=2&offset=2", { token: dev.token });
    expect(page2.body.tokens.map((x: { name: string }) => x.name)).toEqual(["gamma-search"]);
    // A last page shorter than the limit, and a page past the end, still say the total of all matches.
    expect(page2.body.total).toBe(3);
    const past = await t.call("GET", "/v1/api-tokens?q=search&limit=2&offset=5", { token: dev.token });
    expect(past.body).toEqual({ tokens: [], total: 3 });
  });

  test("q treats % and _ literally", async () => {
    const res = await t.call("GET", "/v1/api-tokens?q=%25", { token: owner });
    expect(res.body.total).toBe(0);
  });

  test.each([
    ["sort=secret_hash", "query.sort"],
    ["direction=sideways", "query.direction"],
    ["limit=0", "query.limit"],
    ["limit=201", "query.limit"],
    ["limit=-5", "query.limit"],
    ["limit=99999999999999999999", "query.limit"],
    ["offset=-1", "query.offset"],
    ["limit=abc", "query.limit"],
    ["limit=1&limit=2", "query.limit"],
  ])("query %s is 400 invalid_request at %s", async (qs, path) => {
    const res = await t.call("GET", `/v1/api-tokens?${qs}`, { token: owner });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_request");
    expect(res.body.details[0].path).toBe(path);
  });

  test("is_expired turns true after the expiry; last_used_at records use", async () => {
    // The owner's session lasts 24 hours too, so list with a long-lived owner token.
    const lister = (await create(owner, { name: "lister", role: "owner", expires_in_days: 365 })).body.token;
    const created = await create(owner, { name: "short", role: "developer", expires_in_days: 1 });
    await t.call("GET", "/v1/users/me", { token: created.body.token });
    let listed = await t.call("GET", `/v1/api-tokens?q=short`, { token: lister });
    expect(listed.body.tokens[0].last_used_at).toBe(t.clock.now());
    expect(listed.body.tokens[0].is_expired).toBe(false);
    t.clock.advance(86400);
    try {
      listed = await t.call("GET", `/v1/api-tokens?q=short`, { token: lister });
      expect(listed.body.tokens[0].is_expired).toBe(true);
      const used = await t.call("GET", "/v1/users/me", { token: created.body.token });
      expect(used.body).toEqual({ code: "invalid_token", message: "The API token is not valid." });
    } finally {
      t.clock.advance(-86400);
    }
  });
});

describe("revoking tokens", () => {
  test("a user revokes their own token; it stops working and lists as revoked", async () => {
    const dev = await userWithRole(t, owner, "developer");
    const created = await create(dev.token, { name: "mine", role: "developer" });
    const res = await t.call("DELETE", `/v1/api-tokens/${created.body.id}`, { token: dev.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ revoked: true });
    const use = await t.call("GET", "/v1/users/me", { token: created.body.token });
    expect(use.body).toEqual({ code: "invalid_token", message: "The API token is not valid." });
    const listed = await t.call("GET", "/v1/api-tokens", { token: dev.token });
    expect(listed.body.tokens[0].is_revoked).toBe(true);
  });

  test("a non-admin cannot revoke someone else's token (404, as if it did not exist)", async () => {
    const a = await userWithRole(t, owner, "maintainer");
    const b = await userWithRole(t, owner, "developer");
    const created = await create(a.token, { name: "a-token", role: "developer" });
    const res = await t.call("DELETE", `/v1/api-tokens/${created.body.id}`, { token: b.token });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ code: "token_not_found", message: "No API token with that id." });
    expect((await t.call("GET", "/v1/users/me", { token: created.body.token })).status).toBe(200);
  });

  test("an admin revokes anyone's token", async () => {
    const admin = await userWithRole(t, owner, "admin");
    const dev = await userWithRole(t, owner, "developer");
    const created = await create(dev.token, { name: "dev-token", role: "developer" });
    const res = await t.call("DELETE", `/v1/api-tokens/${created.body.id}`, { token: admin.token });
    expect(res.body).toEqual({ revoked: true });
  });

  test("an unknown id is 404 token_not_found", async () => {
    const res = await t.call("DELETE", "/v1/api-tokens/doesnotexist", { token: owner });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("token_not_found");
  });
});

describe("credentials", () => {
  test("every refused API token answers the same 401 body; only the server log says why", async () => {
    const lines: Record<string, unknown>[] = [];
    const quiet = t.ctx.log;
    t.ctx.log = createLogger("debug", (line) => lines.push(JSON.parse(line)));
    try {
      const lister = (await create(owner, { name: "refusal-lister", role: "owner", expires_in_days: 365 })).body.token;
      const revoked = await create(owner, { name: "refusal-revoked", role: "developer" });
      await t.call("DELETE", `/v1/api-tokens/${revoked.body.id}`, { token: owner });
      const expiring = await create(lister, { name: "refusal-expired", role: "developer", expires_in_days: 1 });
      const dev = await userWithRole(t, owner, "developer");
      const orphaned = await create(dev.token, { name: "refusal-orphaned", role: "developer" });
      await t.call("DELETE", `/v1/users/${dev.id}`, { token: owner });
      const unknown = "roost_pat_" + "A".repeat(58);
      t.clock.advance(86400);
      try {
        const cases = { unknown, revoked: revoked.body.token, expired: expiring.body.token, creator_inactive: orphaned.body.token };
        for (const token of Object.values(cases)) {
          const answer = await t.call("GET", "/v1/users/me", { token });
          expect(answer.status).toBe(401);
          expect(answer.text).toBe(JSON.stringify({ code: "invalid_token", message: "The API token is not valid." }));
        }
        const reasons = lines.filter((l) => l.msg === "api token refused").map((l) => l.reason);
        expect(reasons).toEqual(Object.keys(cases));
        expect(lines.some((l) => l.msg === "api token refused" && l.reason === "revoked" && l.token_id === revoked.body.id)).toBe(true);
        expect(JSON.stringify(lines)).not.toContain(revoked.body.token);
      } finally {
        t.clock.advance(-86400);
      }
    } finally {
      t.ctx.log = quiet;
    }
  });

  test.each([
    ["GET", "/v1/api-tokens"],
    ["POST", "/v1/api-tokens"],
    ["DELETE", "/v1/api-tokens/x"],
  ])("%s %s without Authorization is 401 missing_auth", async (method, path) => {
    const res = await t.call(method, path, { body: method === "POST" ? { name: "x", role: "developer" } : undefined });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      code: "missing_auth",
      message: "This endpoint takes a user session or an API token as 'Authorization: Bearer <token>'; the request has none.",
    });
  });

  test("a token of another kind (setup, recovery) is not a session", async () => {
    const res = await t.call("GET", "/v1/api-tokens", { token: "roost_setup_" + "a".repeat(58) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      code: "wrong_credential",
      message: "A setup token (roost_setup_…) cannot call user endpoints: this endpoint takes a user session or an API token.",
    });
  });

  test("a tampered token (checksum mismatch) is refused", async () => {
    const created = await create(owner, { name: "tamper", role: "developer" });
    const tampered = created.body.token.slice(0, -1) + (created.body.token.endsWith("A") ? "B" : "A");
    const res = await t.call("GET", "/v1/users/me", { token: tampered });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("invalid_token");
  });
});
