// The route table's order decides which route serves a path two of them match (lib/http/app.ts
// findRoute), whether the path is looked up directly (no parameters) or walked.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../helpers/app.ts";
import { createApp } from "../../../lib/http/app.ts";
import { defineEndpoint, withPathParams, type RouteEntry } from "../../../lib/http/route.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** A public GET route answering with its own name. */
function route(path: string, name: string): RouteEntry {
  const endpoint = defineEndpoint({
    operationId: `route_${name}`,
    summary: "answers with its name",
    async handle() {
      return { served_by: name };
    },
  });
  return { method: "GET", path, auth: "public", tag: "test", load: async () => withPathParams(path, endpoint) };
}

async function servedBy(routes: RouteEntry[], path: string): Promise<unknown> {
  const response = await createApp(t.ctx, routes).fetch(new Request(`http://127.0.0.1${path}`), "127.0.0.1");
  expect(response.status).toBe(200);
  return ((await response.json()) as { served_by: unknown }).served_by;
}

describe("the route table's order", () => {
  test("a path without parameters listed first serves its path, and the parameter route the others", async () => {
    const routes = [route("/v1/things/special", "static"), route("/v1/things/{thing_id}", "param")];
    expect(await servedBy(routes, "/v1/things/special")).toBe("static");
    expect(await servedBy(routes, "/v1/things/t1")).toBe("param");
  });

  test("a parameter route listed first serves a path a later route names exactly", async () => {
    const routes = [route("/v1/things/{thing_id}", "param"), route("/v1/things/special", "static")];
    expect(await servedBy(routes, "/v1/things/special")).toBe("param");
  });

  test("of two routes with the same path, the first serves it", async () => {
    expect(await servedBy([route("/v1/twice", "first"), route("/v1/twice", "second")], "/v1/twice")).toBe("first");
  });

  test("a trailing slash or another method is not the route", async () => {
    const app = createApp(t.ctx, [route("/v1/things/special", "static")]);
    const slash = await app.fetch(new Request("http://127.0.0.1/v1/things/special/"), "127.0.0.1");
    expect(slash.status).toBe(404);
    const post = await app.fetch(new Request("http://127.0.0.1/v1/things/special", { method: "POST" }), "127.0.0.1");
    expect(post.status).toBe(405);
    expect(await post.json()).toEqual({ code: "method_not_allowed", message: "POST is not allowed on /v1/things/special; use GET." });
  });
});
