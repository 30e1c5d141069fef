// Cross-cutting error behaviour of the pipeline (docs/api.md "Errors").
import { beforeAll, describe, expect, test } from "bun:test";
import { bootstrapOwner, testAppPer } from "../helpers/app.ts";

const t = testAppPer("file");
let owner: string;
beforeAll(async () => (owner = await bootstrapOwner(t)));

describe("errors are JSON {code, message}", () => {
  test("an unknown route answers 404 not_found", async () => {
    const res = await t.call("GET", "/v1/nothing-here");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ code: "not_found", message: "No endpoint at GET /v1/nothing-here." });
    expect(res.headers.get("content-type")).toContain("application/json");
  });

  test("a known path with the wrong method answers 405 with Allow", async () => {
    const res = await t.call("PUT", "/v1/api-tokens", { token: owner });
    expect(res.status).toBe(405);
    expect(res.body.code).toBe("method_not_allowed");
    expect(res.headers.get("allow")).toBe("GET, POST");
  });

  test("a body that is not JSON by content type answers 415", async () => {
    const res = await t.call("POST", "/v1/api-tokens", { token: owner, raw: "name=x", contentType: "application/x-www-form-urlencoded" });
    expect(res.status).toBe(415);
    expect(res.body.code).toBe("unsupported_media_type");
  });

  test("malformed JSON answers 400 malformed_json", async () => {
    const res = await t.call("POST", "/v1/api-tokens", { token: owner, raw: '{"name":', contentType: "application/json" });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: "malformed_json", message: "The request body is not valid JSON." });
  });

  test("a body over the 1 MiB limit answers 413", async () => {
    const res = await t.call("POST", "/v1/api-tokens", {
      token: owner,
      raw: JSON.stringify({ name: "x".repeat(1024 * 1024 + 10), role: "owner" }),
      contentType: "application/json",
    });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe("payload_too_large");
  });

  test("a zod failure answers 400 invalid_request with details", async () => {
    const res = await t.call("POST", "/v1/api-tokens", { token: owner, body: { name: "", role: "emperor" } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_request");
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(["body.name", "body.role"]);
  });

  test("every response carries a request id", async () => {
    const res = await t.call("GET", "/v1/setup/status");
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("every API answer, success or error, tells browsers not to sniff its type", async () => {
    for (const res of [await t.call("GET", "/v1/setup/status"), await t.call("GET", "/v1/nope"), await t.call("GET", "/v1/users/me")]) {
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    }
  });
});

describe("an unexpected exception", () => {
  test("is logged with the request id and answered 500 internal_error without internals", async () => {
    const { createApp } = await import("../../lib/http/app.ts");
    const { defineEndpoint } = await import("../../lib/http/route.ts");
    const lines: string[] = [];
    const { createLogger } = await import("../../lib/daemon/log.ts");
    const app = createApp({ ...t.ctx, log: createLogger("debug", (l) => lines.push(l)) }, [
      {
        method: "GET",
        path: "/v1/boom",
        auth: "public",
        tag: "test",
        load: async () =>
          defineEndpoint({
            operationId: "boom",
            summary: "throws",
            async handle() {
              throw new Error("secret internal detail at /srv/roost/lib/x.ts:12");
            },
          }),
      },
    ]);
    const res = await app.fetch(new Request("http://127.0.0.1/v1/boom"), "127.0.0.1");
    const body = await res.json();
    const requestId = res.headers.get("x-request-id")!;
    expect(res.status).toBe(500);
    expect(body).toEqual({ code: "internal_error", message: `An unexpected error occurred; quote request id ${requestId} to the operator.` });
    expect(JSON.stringify(body)).not.toContain("secret internal detail");
    expect(lines.some((l) => l.includes(requestId) && l.includes("secret internal detail"))).toBe(true);
  });
});
