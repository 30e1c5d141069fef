// The route table names each handler module without importing it (lib/http/route.ts
// RouteEntry.load): `roost serve` is ready without building some 120 handlers' zod schemas, and a
// route's first request imports its handler alone. Run in a fresh process, whose module registry
// (require.cache, which lists ES modules too) nothing else has filled.
import { describe, expect, test } from "bun:test";
import { BUN, REPO_ROOT } from "../helpers/daemon.ts";

const SCRIPT = `
const { routes } = await import("./handlers/routes.ts");
const handlers = () => Object.keys(require.cache).filter((k) => k.includes("/handlers/") && !k.endsWith("/handlers/routes.ts")).map((k) => k.slice(k.indexOf("/handlers/") + 1));
const before = handlers();
const healthz = await routes.find((r) => r.path === "/healthz").load();
console.log(JSON.stringify({ before, after: handlers(), operationId: healthz.operationId }));
`;

describe("the route table", () => {
  test("imports no handler until a route is used, then only that route's", () => {
    const run = Bun.spawnSync([BUN, "-e", SCRIPT], { cwd: REPO_ROOT, stdout: "pipe", stderr: "pipe" });
    expect(run.stderr.toString()).toBe("");
    expect(JSON.parse(run.stdout.toString())).toEqual({ before: [], after: ["handlers/meta/healthz.ts"], operationId: "healthz" });
  });
});
