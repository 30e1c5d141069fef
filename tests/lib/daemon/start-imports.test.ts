// What `roost serve` imports before it is ready (bin/roost.ts: lib/daemon/server.ts and the route
// table) leaves out the background tasks' modules, each imported when its task first runs
// (lib/daemon/background.ts), seconds after the start, and the largest schemas: the pipeline
// file's and the publishers' (the stores read rows through lib/pipelines/snapshot.ts), the
// deployments' (the first deployment route), the forges' (the first commit status) and the API
// document's builder. Run in a fresh process, whose module registry (require.cache, which lists
// ES modules too) nothing else has filled.
import { describe, expect, test } from "bun:test";
import { BUN, REPO_ROOT } from "../../helpers/daemon.ts";

const TASK_MODULES = [
  "lib/test-results/check-runs.ts",
  "lib/runners/reaper.ts",
  "lib/forges/git/poll.ts",
  "lib/schedules/schedules.ts",
  "lib/notifications/notifications.ts",
  "lib/retention/retention.ts",
  "lib/publishing/reaper.ts",
  "lib/publishing/host-release.ts",
  "lib/logs/archive.ts",
];

/** Built on first use: by a handler, a background task, or GET /v1/openapi.json. */
const SCHEMA_MODULES = [
  "lib/pipelines/config.ts",
  "lib/publishing/publishers.ts",
  "lib/publishing/deployments.ts",
  "lib/forges/registry.ts",
  "lib/http/openapi.ts",
];

const SCRIPT = `
await import("./lib/daemon/server.ts");
await import("./handlers/routes.ts");
console.log(JSON.stringify(Object.keys(require.cache).map((k) => k.slice(${JSON.stringify(REPO_ROOT + "/")}.length))));
`;

describe("roost serve's start", () => {
  test("imports none of the background tasks' modules", () => {
    const run = Bun.spawnSync([BUN, "-e", SCRIPT], { cwd: REPO_ROOT, stdout: "pipe", stderr: "pipe" });
    expect(run.stderr.toString()).toBe("");
    const loaded: string[] = JSON.parse(run.stdout.toString());
    expect(loaded).toContain("lib/daemon/background.ts");
    expect(TASK_MODULES.filter((m) => loaded.includes(m))).toEqual([]);
  });

  test("builds none of the pipeline file's, publishers', deployments' or forges' schemas, nor the API document", () => {
    const run = Bun.spawnSync([BUN, "-e", SCRIPT], { cwd: REPO_ROOT, stdout: "pipe", stderr: "pipe" });
    expect(run.stderr.toString()).toBe("");
    const loaded: string[] = JSON.parse(run.stdout.toString());
    expect(SCHEMA_MODULES.filter((m) => loaded.includes(m))).toEqual([]);
  });
});
