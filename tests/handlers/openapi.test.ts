// The API document is generated from the route table and the handlers' schemas (lib/http/openapi.ts).
import { describe, expect, test } from "bun:test";
import { testAppPer } from "../helpers/app.ts";
import { routes } from "../../handlers/routes.ts";
import { describeRule, loadRoutes } from "../../lib/http/route.ts";

const t = testAppPer("file");

describe("GET /v1/openapi.json", () => {
  test("is public OpenAPI 3.1 and lists every route of the table with its auth rule", async () => {
    const res = await t.call("GET", "/v1/openapi.json", { peer: "198.51.100.1" });
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe("3.1.0");
    for (const route of await loadRoutes(routes)) {
      const op = res.body.paths[route.path]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${route.path}`).toBeDefined();
      expect(op["x-roost-auth"]).toBe(describeRule(route.auth));
      expect(op.operationId).toBe(route.endpoint.operationId);
    }
  });

  test("request and response schemas come from the zod schemas the handlers validate with", async () => {
    const doc = (await t.call("GET", "/v1/openapi.json")).body;
    const create = doc.paths["/v1/api-tokens"].post;
    const body = create.requestBody.content["application/json"].schema;
    expect(body.required).toEqual(["name", "role"]);
    expect(body.properties.role.enum).toEqual(["owner", "admin", "maintainer", "developer"]);
    expect(body.properties.name.maxLength).toBe(100);
    expect(create.responses["201"].content["application/json"].schema.properties.token.type).toBe("string");
    const list = doc.paths["/v1/api-tokens"].get;
    const sort = list.parameters.find((p: { name: string }) => p.name === "sort");
    expect(sort.schema.enum).toContain("created_at");
    expect(list.responses["401"].description).toContain("missing_auth");
  });

  test("operation ids are unique", async () => {
    const ids = (await loadRoutes(routes)).map((r) => r.endpoint.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
