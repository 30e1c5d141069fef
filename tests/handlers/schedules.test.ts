// Scheduled builds (docs/operations.md "Scheduled builds"): the schedule API, one build per slot
// across processes sharing one database, one build after downtime, and unchanged heads skipped.
import { describe, expect, test } from "bun:test";
import { userWithRole, type TestApp } from "../helpers/app.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, SHA_B, createPipeline, createProject, startGithubFixture, fixturePerFile } from "../helpers/ci.ts";
import { runDueSchedules } from "../../lib/schedules/schedules.ts";
import { openDatabase } from "../../lib/db/client.ts";

let t: TestApp, host: HostApiStandIn, owner: string;
fixturePerFile(startGithubFixture, (fixture) => ({ t, host, owner } = fixture));

// The test clock starts at 2027-01-15T08:00:00Z.
const START = 1_800_000_000;

async function setup(body: Record<string, unknown>) {
  const project = await createProject(t, owner);
  const pipeline = await createPipeline(t, owner, project.id);
  const res = await t.call("POST", `/v1/pipelines/${pipeline.id}/schedules`, { token: owner, body });
  expect(res.status).toBe(201);
  return { project, pipeline, schedule: res.body.schedule };
}

async function scheduledBuilds(pipelineId: string) {
  const res = await t.call("GET", `/v1/pipelines/${pipelineId}/builds?trigger_type=schedule`, { token: owner });
  expect(res.status).toBe(200);
  return res.body.builds;
}

describe("schedule API", () => {
  test("create, read, list, update and delete; the next run is in the schedule's time zone", async () => {
    t.clock.set(START);
    const { pipeline, schedule } = await setup({ cron: "30 2 * * *", timezone: "Europe/Berlin", build_when_unchanged: false });
    // 02:30 in Berlin (UTC+1 in January) is 01:30 UTC on the next day.
    expect(schedule).toEqual({
      id: schedule.id,
      pipeline_id: pipeline.id,
      cron: "30 2 * * *",
      timezone: "Europe/Berlin",
      branch: "main",
      build_when_unchanged: false,
      enabled: true,
      source: "api",
      config_path: null,
      next_run_at: Date.parse("2027-01-16T01:30:00Z") / 1000,
      last_run: null,
      created_at: START,
      updated_at: START,
    });
    const list = await t.call("GET", `/v1/pipelines/${pipeline.id}/schedules`, { token: owner });
    expect(list.body.schedules).toEqual([schedule]);
    const patched = await t.call("PATCH", `/v1/pipelines/${pipeline.id}/schedules/${schedule.id}`, { token: owner, body: { timezone: "UTC", enabled: false } });
    expect(patched.status).toBe(200);
    expect(patched.body.schedule).toMatchObject({ timezone: "UTC", enabled: false, next_run_at: null });
    expect((await t.call("GET", `/v1/pipelines/${pipeline.id}/schedules/${schedule.id}`, { token: owner })).body.schedule).toEqual(patched.body.schedule);
    expect((await t.call("DELETE", `/v1/pipelines/${pipeline.id}/schedules/${schedule.id}`, { token: owner })).body).toEqual({ deleted: true });
    const gone = await t.call("GET", `/v1/pipelines/${pipeline.id}/schedules/${schedule.id}`, { token: owner });
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ code: "not_found", message: "No schedule with that id on this pipeline." });
  });

  test("a bad expression or time zone answers 400 with details naming the field", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    const bad = await t.call("POST", `/v1/pipelines/${pipeline.id}/schedules`, { token: owner, body: { cron: "61 * * * *", timezone: "Mars/Olympus" } });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("invalid_request");
    expect(bad.body.details.map((d: { path: string }) => d.path).sort()).toEqual(["body.cron", "body.timezone"]);
    const seconds = await t.call("POST", `/v1/pipelines/${pipeline.id}/schedules`, { token: owner, body: { cron: "0 * * * * *" } });
    expect(seconds.status).toBe(400);
    expect(seconds.body.details[0].message).toContain("five fields");
  });

  test("a developer may read schedules but not create them; a schedule of another pipeline is 404", async () => {
    const { project, pipeline, schedule } = await setup({ cron: "@daily" });
    const dev = await userWithRole(t, owner, "developer");
    await t.call("PUT", `/v1/projects/${project.id}/members/${dev.id}`, { token: owner, body: { role: "developer" } });
    expect((await t.call("GET", `/v1/pipelines/${pipeline.id}/schedules`, { token: dev.token })).status).toBe(200);
    const denied = await t.call("POST", `/v1/pipelines/${pipeline.id}/schedules`, { token: dev.token, body: { cron: "@daily" } });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe("forbidden");
    const other = await createPipeline(t, owner, project.id);
    expect((await t.call("GET", `/v1/pipelines/${other.id}/schedules/${schedule.id}`, { token: owner })).status).toBe(404);
  });
});

describe("firing", () => {
  test("two processes on one database build each slot exactly once", async () => {
    t.clock.set(START);
    const { pipeline, schedule } = await setup({ cron: "*/5 * * * *" });
    t.clock.set(START + 5 * 60 + 3);
    // A second connection to the same database file stands for a second daemon process.
    const second = await openDatabase(t.config.databaseUrl);
    try {
      const results = await Promise.all([
        runDueSchedules(t.ctx),
        runDueSchedules({ ...t.ctx, db: second }),
        runDueSchedules(t.ctx),
        runDueSchedules({ ...t.ctx, db: second }),
      ]);
      const mine = results.map((r) => r.built).reduce((a, b) => a + b, 0);
      expect(mine).toBe(1);
    } finally {
      second.close();
    }
    const builds = await scheduledBuilds(pipeline.id);
    expect(builds).toHaveLength(1);
    expect(builds[0]).toMatchObject({
      trigger_type: "schedule",
      schedule_id: schedule.id,
      branch: "main",
      commit_sha: SHA_A,
      status: "queued",
      trigger_ref: "refs/heads/main",
    });
    const read = await t.call("GET", `/v1/pipelines/${pipeline.id}/schedules/${schedule.id}`, { token: owner });
    expect(read.body.schedule.last_run).toEqual({
      slot_at: START + 300,
      result: "built",
      build_id: builds[0].id,
      commit_sha: SHA_A,
      error: null,
      created_at: START + 303,
    });
    expect(read.body.schedule.next_run_at).toBe(START + 600);
  });

  test("after downtime the missed slots are built once, for the latest slot", async () => {
    t.clock.set(START);
    const { pipeline, schedule } = await setup({ cron: "* * * * *" });
    // Down for 3 hours: 180 slots missed.
    t.clock.set(START + 3 * 3600 + 20);
    await runDueSchedules(t.ctx);
    await runDueSchedules(t.ctx);
    const builds = await scheduledBuilds(pipeline.id);
    expect(builds).toHaveLength(1);
    const read = await t.call("GET", `/v1/pipelines/${pipeline.id}/schedules/${schedule.id}`, { token: owner });
    expect(read.body.schedule.last_run.slot_at).toBe(START + 3 * 3600);
    expect(read.body.schedule.next_run_at).toBe(START + 3 * 3600 + 60);
  });

  test("build_when_unchanged false: a slot whose head has not moved builds nothing; a new head builds", async () => {
    t.clock.set(START);
    const { pipeline, schedule } = await setup({ cron: "0 * * * *", build_when_unchanged: false });
    t.clock.set(START + 3600);
    expect((await runDueSchedules(t.ctx)).built).toBe(1);
    t.clock.set(START + 2 * 3600);
    expect(await runDueSchedules(t.ctx)).toEqual({ built: 0, unchanged: 1, failed: 0, skipped: 0 });
    expect((await t.call("GET", `/v1/pipelines/${pipeline.id}/schedules/${schedule.id}`, { token: owner })).body.schedule.last_run).toMatchObject({
      result: "unchanged",
      commit_sha: SHA_A,
      build_id: null,
    });
    host.heads.set("acme/app@main", SHA_B);
    try {
      t.clock.set(START + 3 * 3600);
      expect((await runDueSchedules(t.ctx)).built).toBe(1);
    } finally {
      host.heads.set("acme/app@main", SHA_A);
    }
    expect((await scheduledBuilds(pipeline.id)).map((b: { commit_sha: string }) => b.commit_sha)).toEqual([SHA_B, SHA_A]);
  });

  test("a branch the host does not know records a failed run with the reason, and the next slot tries again", async () => {
    t.clock.set(START);
    const { pipeline, schedule } = await setup({ cron: "0 * * * *", branch: "no-such-branch" });
    t.clock.set(START + 3600);
    expect((await runDueSchedules(t.ctx)).failed).toBe(1);
    const read = await t.call("GET", `/v1/pipelines/${pipeline.id}/schedules/${schedule.id}`, { token: owner });
    expect(read.body.schedule.last_run).toMatchObject({ result: "failed", build_id: null });
    expect(read.body.schedule.last_run.error).toContain("no-such-branch");
    expect(read.body.schedule.next_run_at).toBe(START + 7200);
    expect(await scheduledBuilds(pipeline.id)).toHaveLength(0);
  });
});
