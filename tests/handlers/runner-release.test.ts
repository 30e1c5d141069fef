// POST /v1/runners/{runner_id}/jobs/{job_id}/release: a stopping runner hands back a job it has
// not started (docs/runners.md "Stopping a runner"), through the router in-process.
import { describe, expect, test } from "bun:test";
import { expectError, type TestApp } from "../helpers/app.ts";
import { SHA_A, createPipeline, startCiFixture, fixturePerFile } from "../helpers/ci.ts";
import { runnerClient } from "../helpers/publishing.ts";

let t: TestApp, owner: string, projectId: string;
fixturePerFile(startCiFixture, (fixture) => ({ t, owner, projectId } = fixture));

const runner = () => runnerClient(t, owner);

async function queuedBuild() {
  const pipeline = await createPipeline(t, owner, projectId);
  return (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body.build;
}

describe("releasing a job", () => {
  test("a job not started goes back to the queue, with no runner and no start time, and another runner claims it", async () => {
    const build = await queuedBuild();
    const a = await runner();
    const claimed = await a.claim();
    expect(claimed.status).toBe(201);
    const jobId = claimed.body.job.job_id;
    const released = await a.call("POST", `/jobs/${jobId}/release`);
    expect(released.status).toBe(200);
    expect(released.body).toEqual({ released: true, build_status: "queued" });
    const after = (await t.call("GET", `/v1/builds/${build.id}`, { token: owner })).body.build;
    expect(after).toMatchObject({ status: "queued", runner_id: null, started_at: null });
    // The released job is over: the runner that let it go cannot report on it.
    expect((await a.call("PUT", `/jobs/${jobId}/steps/checkout`, { status: "running", started_at: 1 })).body).toEqual({
      code: "job_finished",
      message: "This job is finished; stop working on it.",
    });
    const b = await runner();
    const again = await b.claim();
    expect(again.status).toBe(201);
    expect(again.body.job.build.id).toBe(build.id);
  });

  test("a job that reported a step is not released: 409 job_started", async () => {
    await queuedBuild();
    const a = await runner();
    const jobId = (await a.claim()).body.job.job_id;
    await a.call("PUT", `/jobs/${jobId}/steps/checkout`, { status: "running", started_at: 1 });
    const refused = await a.call("POST", `/jobs/${jobId}/release`);
    expectError(refused, 409, { code: "job_started", message: "This job has started (it reported a step or a log line); finish it instead of releasing it." });
  });

  test("another runner's job is 409 job_not_assigned", async () => {
    await queuedBuild();
    const a = await runner();
    const b = await runner();
    const jobId = (await a.claim()).body.job.job_id;
    const refused = await b.call("POST", `/jobs/${jobId}/release`);
    expectError(refused, 409, { code: "job_not_assigned", message: "This job is not assigned to this runner." });
  });
});
