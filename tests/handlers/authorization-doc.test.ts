// docs/authorization.md and the API document say who may call each route, generated from the
// route table's rules, so what the docs promise is what the pipeline enforces.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { routes } from "../../handlers/routes.ts";
import { withFreshTable } from "../../lib/http/authorization-table.ts";
import { buildOpenApiDocument } from "../../lib/http/openapi.ts";
import { loadRoutes } from "../../lib/http/route.ts";

const loaded = await loadRoutes(routes);

describe("the authorization docs come from the route table", () => {
  test("docs/authorization.md is up to date (run `npm run docs` after changing a rule)", () => {
    const doc = readFileSync(resolve(import.meta.dir, "../../docs/authorization.md"), "utf8");
    expect(doc).toBe(withFreshTable(doc, loaded));
  });

  test("every operation documents the refusals its rule can answer", () => {
    const doc = buildOpenApiDocument(loaded) as { paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>> };
    const op = (path: string, method: string) => doc.paths[path]![method]!.responses;
    // an admin route: no credential, a bad one, a role too low
    expect(Object.keys(op("/v1/settings/oidc", "put"))).toEqual(expect.arrayContaining(["401", "403"]));
    expect(op("/v1/settings/oidc", "put")["403"]!.description).toContain("forbidden");
    // a project route: also 404 for a project the caller may not see
    expect(op("/v1/builds/{build_id}/cancel", "post")["404"]!.description).toContain("not_found");
    expect(op("/v1/builds/{build_id}/cancel", "post")["403"]!.description).toContain("forbidden");
    // a public route refuses nobody
    expect(op("/healthz", "get")["401"]).toBeUndefined();
  });

  test("no handler lists the refusals its route's rule already answers", () => {
    const doubled = loaded.filter((r) => (r.endpoint.errors ?? []).some((c: string) => ["missing_auth", "invalid_session", "invalid_token"].includes(c)));
    expect(doubled.map((r) => `${r.method} ${r.path}`)).toEqual([]);
  });
});
