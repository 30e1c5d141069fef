// The route's path names its parameters (lib/http/route.ts withPathParams): an endpoint states only
// those it reads or that are not plain ids, and every other one is still validated as an id.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { z } from "zod";
import { createTestApp, type TestApp } from "../../helpers/app.ts";
import { createApp } from "../../../lib/http/app.ts";
import { defineEndpoint, withPathParams } from "../../../lib/http/route.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const echo = defineEndpoint({
  operationId: "echo_params",
  summary: "answers with its path parameters",
  params: z.object({ step: z.string().regex(/^[a-z]+$/) }),
  async handle({ params }) {
    return { params };
  },
});

function appWith(path: string) {
  return createApp(t.ctx, [{ method: "GET", path, auth: "public", tag: "test", load: async () => withPathParams(path, echo) }]);
}

describe("path parameters", () => {
  test("a parameter the endpoint leaves out arrives validated as an id, beside the one it states", async () => {
    const app = appWith("/v1/things/{thing_id}/steps/{step}");
    const ok = await app.fetch(new Request("http://127.0.0.1/v1/things/t1/steps/build"), "127.0.0.1");
    expect(await ok.json()).toEqual({ params: { thing_id: "t1", step: "build" } });
    const long = await app.fetch(new Request(`http://127.0.0.1/v1/things/${"x".repeat(65)}/steps/build`), "127.0.0.1");
    expect(long.status).toBe(400);
    expect(await long.json()).toMatchObject({ code: "invalid_request", details: [{ path: "path.thing_id" }] });
    const badStep = await app.fetch(new Request("http://127.0.0.1/v1/things/t1/steps/B!"), "127.0.0.1");
    expect(badStep.status).toBe(400);
  });

  test("a stated parameter the path does not name is refused when the route loads", () => {
    expect(() => withPathParams("/v1/things/{thing_id}", echo)).toThrow("echo_params: params step not in the path /v1/things/{thing_id}");
  });

  test("they keep the path's order, which the API document lists them in", () => {
    const endpoint = withPathParams("/v1/things/{thing_id}/steps/{step}", echo);
    expect(Object.keys(endpoint.params!.shape)).toEqual(["thing_id", "step"]);
  });
});
