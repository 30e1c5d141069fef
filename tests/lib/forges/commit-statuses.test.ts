// Commit statuses back to the hosts (docs/webhooks.md "Commit statuses"), against the
// host API stand-in.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type TestApp } from "../../helpers/app.ts";
import type { HostApiStandIn } from "../../support/host-api-stand-in.ts";
import { SHA_A, createPipeline, createProject, startGithubFixture } from "../../helpers/ci.ts";
import { REPORT_ATTEMPTS_BEFORE_INCIDENT, backoffSeconds, reportCommitStatuses } from "../../../lib/forges/commit-statuses.ts";
import { transitionBuild } from "../../../lib/builds/transition.ts";

let t: TestApp;
let host: HostApiStandIn;
let owner: string;
const report = () =>
  reportCommitStatuses({
    db: t.db,
    secrets: t.ctx.secrets,
    config: t.ctx.config,
    clock: t.clock,
    log: t.ctx.log,
    now: t.clock.now(),
    baseUrl: "https://ci.example.test",
  });
const statusCalls = () => host.requests.filter((r) => r.method === "POST" && r.path.includes("/statuses/"));

beforeAll(async () => {
  ({ t, host, owner } = await startGithubFixture());
  await t.call("POST", "/v1/integrations", { token: owner, body: { provider: "gitlab", name: "GitLab", api_url: host.url, access_token: host.gitlab.token } });
});
afterAll(async () => {
  t.close();
  await host.stop();
});

describe("commit statuses", () => {
  test("GitHub: queued, running and finished builds are reported once each, with a link and a context per pipeline", async () => {
    const project = await createProject(t, owner, "acme/app");
    const pipeline = await createPipeline(t, owner, project.id, { name: "Android" });
    const build = (await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
      .build;
    const before = statusCalls().length;
    expect(await report()).toBe(1);
    expect(await report()).toBe(0); // nothing changed, nothing sent
    await transitionBuild(t.ctx, build.id, "start", { runner_id: "r" });
    expect(await report()).toBe(1);
    await transitionBuild(t.ctx, build.id, "succeed", { exit_code: 0 });
    expect(await report()).toBe(1);
    const calls = statusCalls().slice(before);
    expect(calls.map((c) => c.path)).toEqual(Array(3).fill(`/repos/acme/app/statuses/${SHA_A}`));
    expect(calls.map((c) => (c.body as { state: string }).state)).toEqual(["pending", "pending", "success"]);
    expect(calls[2]!.body).toEqual({
      state: "success",
      target_url: `https://ci.example.test/v1/builds/${build.id}`,
      description: `Build #${build.build_number} succeeded`,
      context: "roost/Android",
    });
    expect(calls[0]!.headers.authorization).toBe("token ghs_standin_installation_token");
  });

  test("GitLab: the commit status API with GitLab's states", async () => {
    const project = await createProject(t, owner, "group/mobile");
    const pipeline = await createPipeline(t, owner, project.id, { name: "iOS" });
    const build = (await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
      .build;
    await transitionBuild(t.ctx, build.id, "start");
    await report();
    await transitionBuild(t.ctx, build.id, "fail", { exit_code: 1 });
    await report();
    const calls = statusCalls().filter((c) => c.path.startsWith("/api/v4/projects/77/statuses/"));
    expect(calls.map((c) => (c.body as { state: string }).state)).toEqual(["running", "failed"]);
    expect(calls[1]!.body).toMatchObject({ name: "roost/iOS", description: `Build #${build.build_number} failed` });
    expect(calls[1]!.headers["private-token"]).toBe(host.gitlab.token);
  });

  test("failures retry with backoff, never touch the build, and raise an incident when persistent", async () => {
    const project = await createProject(t, owner, "acme/website");
    const pipeline = await createPipeline(t, owner, project.id);
    const build = (await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
      .build;
    host.failNext(1000);
    for (let i = 0; i < REPORT_ATTEMPTS_BEFORE_INCIDENT; i++) {
      expect(await report()).toBe(0);
      expect(await report()).toBe(0); // backing off: not retried at once
      t.clock.advance(700);
    }
    const row = (await t.db.execute({ sql: "SELECT attempts, last_error FROM commit_status_outbox WHERE build_id = ?", args: [build.id] })).rows[0]!;
    expect(row.attempts).toBe(REPORT_ATTEMPTS_BEFORE_INCIDENT);
    expect(String(row.last_error)).toContain("500");
    expect((await t.call("GET", `/v1/builds/${build.id}`, { token: owner })).body.build.status).toBe("queued");
    const incidents = (await t.call("GET", "/v1/operator-incidents?status=open", { token: owner })).body.incidents;
    expect(incidents.some((i: { reason: string }) => i.reason === "commit_status_failed")).toBe(true);
    host.failNext(0);
    expect(await report()).toBeGreaterThanOrEqual(1);
    const after = (await t.call("GET", "/v1/operator-incidents?status=open", { token: owner })).body.incidents;
    expect(after.some((i: { reason: string }) => i.reason === "commit_status_failed")).toBe(false);
  });

  test("backoff doubles from 5 s to at most 10 minutes, with jitter", () => {
    expect(backoffSeconds(1, () => 0.5)).toBe(5);
    expect(backoffSeconds(4, () => 0.5)).toBe(40);
    expect(backoffSeconds(30, () => 0.5)).toBe(600);
    expect(backoffSeconds(4, () => 0)).toBe(30);
    expect(backoffSeconds(4, () => 1)).toBe(50);
  });
});
