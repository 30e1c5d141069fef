// `roost build publish` (docs/cli.md): promotion of an earlier successful build from a terminal,
// as a real `roost` process with an API token against the app served on a real socket
// (tests/helpers/app.ts behind Bun.serve), the build run to success through the runner protocol.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { BUN, ROOST } from "../helpers/daemon.ts";
import { createPipeline, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import { connectRunner, putEnvironment, runBuild } from "../helpers/publishing.ts";

let ci: CiFixture;
let server: Server<undefined>;
let url = "";
let apiToken = "";
let pipelineId = "";
let built: any;

const PUBLISHERS = [
  { type: "google_play", name: "play", environment: "testers", package_name: "com.example.app", track: "internal" },
  { type: "firebase_app_distribution", name: "firebase", environment: "testers", app_id: "1:123456789012:android:0a1b2c3d4e5f6789", groups: ["qa"] },
];

async function roost(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = Bun.spawn([BUN, ROOST, ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent", ROOST_URL: url, ROOST_TOKEN: apiToken },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { code, stdout, stderr };
}

beforeAll(async () => {
  ci = await startCiFixture();
  const { t, owner, projectId } = ci;
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request, srv) => t.app.fetch(request, srv.requestIP(request)?.address ?? null) });
  url = `http://127.0.0.1:${server.port}`;
  apiToken = (await t.call("POST", "/v1/api-tokens", { token: owner, body: { name: "cli", role: "developer" } })).body.token;
  await putEnvironment(t, owner, projectId, "testers");
  await putEnvironment(t, owner, projectId, "production", { requires_approval: true });
  pipelineId = (await createPipeline(t, owner, projectId, { name: "android-release", execution_config: { publish: PUBLISHERS } })).id;
  built = await runBuild(t, owner, await connectRunner(t, owner), projectId, pipelineId);
}, 30_000);

afterAll(async () => {
  server?.stop(true);
  await ci?.stop();
});

describe("roost build publish", () => {
  test("promotes a build's Play publisher to production on another track with a staged rollout; it waits for approval", async () => {
    const run = await roost(["build", "publish", built.id, "--environment", "production", "--publisher", "play", "--track", "production", "--rollout", "0.05"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const [deployment] = (await ci.t.call("GET", `/v1/builds/${built.id}/deployments`, { token: ci.owner })).body.deployments.filter(
      (d: any) => d.trigger === "promotion",
    );
    expect(run.stdout).toBe(
      `deployment ${deployment.id}: build #${built.build_number} play to production (com.example.app production): waiting for approval (Approve on the build's page, or POST /v1/deployments/${deployment.id}/approve)\n`,
    );
    expect(deployment).toMatchObject({
      environment: "production",
      publisher: "play",
      status: "waiting_approval",
      requested_by: "owner@example.test",
      config: { track: "production", user_fraction: 0.05 },
    });
  });

  test("--json prints the API's answer; a build with one publisher needs no --publisher", async () => {
    const single = await createPipeline(ci.t, ci.owner, ci.projectId, { execution_config: { publish: [PUBLISHERS[1]] } });
    const build = await runBuild(ci.t, ci.owner, await connectRunner(ci.t, ci.owner), ci.projectId, single.id);
    const run = await roost(["build", "publish", build.id, "--environment", "testers", "--json"]);
    expect(run.code).toBe(0);
    const body = JSON.parse(run.stdout);
    expect(Object.keys(body)).toEqual(["deployment"]);
    expect(body.deployment).toMatchObject({ build_id: build.id, publisher: "firebase", environment: "testers", status: "approved", trigger: "promotion" });
  });

  test("says what is wrong: no --environment, several publishers, a bad rollout (exit 2); a failed build (exit 4)", async () => {
    expect(await roost(["build", "publish", built.id])).toEqual({
      code: 2,
      stdout: "",
      stderr: "roost build publish: missing --environment; see 'roost build publish --help'\n",
    });
    expect(await roost(["build", "publish", built.id, "--environment", "production"])).toEqual({
      code: 2,
      stdout: "",
      stderr: `roost build publish: build #${built.build_number} has several publishers (play, firebase); name one with --publisher\n`,
    });
    expect((await roost(["build", "publish", built.id, "--environment", "production", "--publisher", "play", "--rollout", "5"])).stderr).toBe(
      "roost build publish: --rollout must be a fraction above 0 and at most 1 (0.1 for 10 %), not '5'\n",
    );
    const failed = await runBuild(ci.t, ci.owner, await connectRunner(ci.t, ci.owner), ci.projectId, pipelineId, { status: "failed" });
    expect(await roost(["build", "publish", failed.id, "--environment", "production", "--publisher", "play"])).toEqual({
      code: 4,
      stdout: "",
      stderr: `roost: build_not_publishable: Build #${failed.build_number} is failed; only a successful build publishes.\n`,
    });
    const help = await roost(["build", "publish", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toStartWith("Usage: roost build publish <build> --environment E [--publisher P] [--track T] [--rollout FRACTION] [--json]\n");
  });
});
