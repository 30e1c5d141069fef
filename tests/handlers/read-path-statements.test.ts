// The authenticated read path in as few statements as the data allows (issue 20): the credential
// and its user in one read by primary key, remembered only while the database's data version says
// nothing has been committed since (lib/db/verified-reads.ts), so a logout, a revocation or a
// deactivation by this daemon or another on the same file answers the next request; then the
// page. On a route that only reads (an endpoint's readOnly: this list), a remembered credential is
// not checked by a statement before the page: the page's own read confirms it, and a commit it saw
// has the credential read again and the page with it. Counted on the statements the app hands its
// database.
import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { bootstrapOwner, createTestApp, localLogin, userWithRole, type TestApp } from "../helpers/app.ts";
import { mintSecret } from "../../lib/auth/secrets.ts";
import { createApp, type App } from "../../lib/http/app.ts";
import { routes } from "../../handlers/routes.ts";
import { openDatabase, type Db } from "../../lib/db/client.ts";
import { ListTokensQuery } from "../../handlers/api-tokens/list.ts";

let t: TestApp;
let session: string;
let apiToken: string;
let app: App;
const statements: string[] = [];
/** Times the app asked the database for its data version (a statement of its own on bun:sqlite). */
let versionChecks = 0;

beforeAll(async () => {
  t = await createTestApp();
  session = await bootstrapOwner(t);
  apiToken = (await t.call("POST", "/v1/api-tokens", { token: session, body: { name: "reader", role: "owner" } })).body.token;
  const counting = new Proxy(t.db, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop === "readVersion" && typeof value === "function")
        return () => {
          versionChecks++;
          return value.call(target);
        };
      if (prop !== "execute") return typeof value === "function" ? value.bind(target) : value;
      return (stmt: { sql?: string } | string, ...rest: unknown[]) => {
        statements.push((typeof stmt === "string" ? stmt : (stmt.sql ?? "")).replace(/\s+/g, " "));
        return (value as (...a: unknown[]) => unknown).call(target, stmt, ...rest);
      };
    },
  });
  app = createApp({ ...t.ctx, db: counting as typeof t.db }, routes);
});
afterAll(() => t.close());

/**
 * Statements of a request whose credential is remembered: the page alone on bun:sqlite, which tells
 * its data version; through @libsql/client (ROOST_DB_DRIVER=libsql, a libSQL server) the credential
 * is read on every request, before the page, and is refused all the same.
 */
const whileRemembered = () => (t.db.driver === "bun:sqlite" ? 1 : 2);

async function statementsOf(token: string): Promise<string[]> {
  statements.length = 0;
  const response = await app.fetch(new Request("http://127.0.0.1:8080/v1/api-tokens", { headers: { authorization: `Bearer ${token}` } }), "127.0.0.1");
  expect(response.status).toBe(200);
  return [...statements];
}

describe("GET /v1/api-tokens, once the credential's last use is recorded", () => {
  test.each([
    ["a session", () => session, "FROM sessions s JOIN users u"],
    ["an API token", () => apiToken, "FROM api_tokens t JOIN users u"],
  ])("with %s: the credential with its user and the page, then the page alone while nothing is committed", async (_, token, credentialRead) => {
    await statementsOf(token()); // the first use may record last_used_at
    await t.ctx.db.execute("UPDATE instance SET id = id"); // a commit: what was remembered is read again
    const run = await statementsOf(token());
    expect(run).toHaveLength(2);
    expect(run[0]).toContain(credentialRead);
    expect(run[1]).toContain("FROM api_tokens t JOIN users u ON u.id = t.created_by ORDER BY");
    versionChecks = 0;
    const again = await statementsOf(token());
    expect(again).toHaveLength(whileRemembered());
    expect(again.at(-1)).toContain("FROM api_tokens t JOIN users u ON u.id = t.created_by ORDER BY");
    // Not even the data version is asked first: the page's own read confirms the credential (an endpoint's readOnly, lib/http/route.ts).
    expect(versionChecks).toBe(0);
  });

  test("a logout refuses the session's next request", async () => {
    const token = await localLogin(t, "owner@example.test");
    expect(await statementsOf(token)).toHaveLength(2);
    expect(await statementsOf(token)).toHaveLength(whileRemembered());
    expect((await t.call("POST", "/v1/auth/logout", { token })).status).toBe(200);
    const after = await t.call("GET", "/v1/api-tokens", { token });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe("invalid_session");
  });
});

describe("a credential remembered by this daemon, changed by another on the same database file", () => {
  // A second connection to the file stands for a second daemon process: its commits are not this
  // daemon's writes, and reach this one only through the file.
  let other: Db;
  beforeAll(async () => {
    other = await openDatabase(t.config.databaseUrl);
  });
  afterAll(() => other.close());

  /** A credential that has just answered twice, the second time from what this daemon remembered. */
  async function remembered(token: string): Promise<void> {
    await statementsOf(token);
    await t.ctx.db.execute("UPDATE instance SET id = id");
    expect(await statementsOf(token)).toHaveLength(2);
    expect(await statementsOf(token)).toHaveLength(whileRemembered());
  }

  test("an API token revoked there is refused on the next request here", async () => {
    const token = (await t.call("POST", "/v1/api-tokens", { token: session, body: { name: "revoked elsewhere", role: "owner" } })).body;
    await remembered(token.token);
    await other.execute({ sql: "UPDATE api_tokens SET revoked_at = ? WHERE id = ?", args: [t.clock.now(), token.id] });
    const after = await t.call("GET", "/v1/api-tokens", { token: token.token });
    expect({ status: after.status, code: after.body.code }).toEqual({ status: 401, code: "invalid_token" });
  });

  test("an API token whose creator is deactivated there is refused on the next request here", async () => {
    const admin = await userWithRole(t, session, "admin");
    const token = (await t.call("POST", "/v1/api-tokens", { token: admin.token, body: { name: "creator deactivated", role: "admin" } })).body.token;
    await remembered(token);
    await other.execute({ sql: "UPDATE users SET active = 0, deactivated_at = ? WHERE id = ?", args: [t.clock.now(), admin.id] });
    const after = await t.call("GET", "/v1/api-tokens", { token });
    expect({ status: after.status, code: after.body.code }).toEqual({ status: 401, code: "invalid_token" });
  });

  test("a session ended there is refused on the next request here", async () => {
    const token = await localLogin(t, "owner@example.test");
    await remembered(token);
    await other.execute({ sql: "DELETE FROM sessions WHERE id = ?", args: [token.slice("roost_sess_".length, "roost_sess_".length + 20)] });
    const after = await t.call("GET", "/v1/api-tokens", { token });
    expect({ status: after.status, code: after.body.code }).toEqual({ status: 401, code: "invalid_session" });
  });

  test("an API token that expires while remembered is refused at its expiry, with nothing committed", async () => {
    const created = (await t.call("POST", "/v1/api-tokens", { token: session, body: { name: "expiring", role: "owner", expires_in_days: 1 } })).body;
    await remembered(created.token);
    const now = t.clock.now();
    t.clock.set(created.expires_at);
    try {
      const commits = t.db.commits;
      const after = await t.call("GET", "/v1/api-tokens", { token: created.token });
      expect({ status: after.status, code: after.body.code }).toEqual({ status: 401, code: "invalid_token" });
      expect(t.db.commits).toBe(commits);
    } finally {
      t.clock.set(now);
    }
  });

  test("a wrong secret under a remembered token's id is refused", async () => {
    await remembered(apiToken);
    // The same id with another secret, its checksum valid: only the stored hash can refuse it.
    const forged = await t.call("GET", "/v1/api-tokens", { token: mintSecret("pat", apiToken.slice("roost_pat_".length, "roost_pat_".length + 20)).token });
    expect({ status: forged.status, code: forged.body.code }).toEqual({ status: 401, code: "invalid_token" });
  });
});

describe("the query of a list asked without one", () => {
  test("is validated once per route, not per request; each request still gets the defaults, whatever the one before asked", async () => {
    const names = async (query: string) =>
      (await t.call("GET", `/v1/api-tokens${query}`, { token: session })).body.tokens.map((token: { name: string }) => token.name) as string[];
    await t.call("POST", "/v1/api-tokens", { token: session, body: { name: "another", role: "developer" } });
    const byDefault = await names("");
    const parses = spyOn(ListTokensQuery, "safeParse");
    try {
      expect(await names("")).toEqual(byDefault);
      expect(await names("")).toEqual(byDefault);
      expect(parses).toHaveBeenCalledTimes(0);
      expect(await names("?sort=name&direction=asc")).toEqual([...byDefault].sort());
      expect(parses).toHaveBeenCalledTimes(1);
      expect(await names("")).toEqual(byDefault);
    } finally {
      parses.mockRestore();
    }
  });
});
