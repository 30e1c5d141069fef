// The authenticated read path in as few statements as the data allows (issue 20): the credential
// and its user in one read by primary key on every request (never cached, so a logout, a
// revocation or a deactivation answers the next request), then the page. Counted on the
// statements the app hands its database.
import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { bootstrapOwner, createTestApp, localLogin, type TestApp } from "../helpers/app.ts";
import { createApp, type App } from "../../lib/http/app.ts";
import { routes } from "../../handlers/routes.ts";
import { ListTokensQuery } from "../../handlers/api-tokens/list.ts";

let t: TestApp;
let session: string;
let apiToken: string;
let app: App;
const statements: string[] = [];

beforeAll(async () => {
  t = await createTestApp();
  session = await bootstrapOwner(t);
  apiToken = (await t.call("POST", "/v1/api-tokens", { token: session, body: { name: "reader", role: "owner" } })).body.token;
  const counting = new Proxy(t.db, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
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
  ])("with %s: two statements, the credential with its user and the page", async (_, token, credentialRead) => {
    await statementsOf(token()); // the first use may record last_used_at
    const run = await statementsOf(token());
    expect(run).toHaveLength(2);
    expect(run[0]).toContain(credentialRead);
    expect(run[1]).toContain("FROM api_tokens t JOIN users u ON u.id = t.created_by ORDER BY");
  });

  test("a logout refuses the session's next request", async () => {
    const token = await localLogin(t, "owner@example.test");
    expect(await statementsOf(token)).toHaveLength(2);
    expect((await t.call("POST", "/v1/auth/logout", { token })).status).toBe(200);
    const after = await t.call("GET", "/v1/api-tokens", { token });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe("invalid_session");
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
