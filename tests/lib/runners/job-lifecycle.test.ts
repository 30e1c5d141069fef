// Every state change of a build or job is one transaction: interrupted at any of its statements
// it leaves the database exactly as it was, and run again it completes. Before this held, a job
// finish interrupted between its two writes left a finished job beside a build `running` for good.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TestApp } from "../../helpers/app.ts";
import { SHA_A, createPipeline, startCiFixture, type CiFixture } from "../../helpers/ci.ts";
import { connectRunner, putEnvironment, uploadArtifact } from "../../helpers/publishing.ts";
import { InjectedFault, failingAtStatement, snapshotState } from "../../helpers/fault-injection.ts";
import { finishJob, loseJob, timeOutBuild } from "../../../lib/runners/job-lifecycle.ts";
import { claimJob, findJob, heartbeat } from "../../../lib/runners/jobs.ts";
import { reapTimedOutBuilds } from "../../../lib/runners/reaper.ts";
import { findRunner } from "../../../lib/runners/store.ts";
import { findBuild } from "../../../lib/builds/store.ts";
import { recordStepResult } from "../../../lib/builds/steps.ts";
import { createBuild } from "../../../lib/builds/create.ts";
import { transitionBuild } from "../../../lib/builds/transition.ts";
import type { Db } from "../../../lib/db/client.ts";

let fixture: CiFixture;
let t: TestApp, owner: string, projectId: string;
let runnerId: string;
let runnerToken: string;

beforeAll(async () => {
  ({ t, owner, projectId } = fixture = await startCiFixture({ ROOST_RUNNER_LEASE_SECONDS: "30" }));
  ({ id: runnerId, token: runnerToken } = await connectRunner(t, owner, "r-faults", { os: "linux", arch: "x64", flutter_versions: ["3.24.5"], xcode: null }));
});
afterAll(() => fixture.stop());

async function queuedBuild(): Promise<string> {
  const pipeline = await createPipeline(t, owner, projectId);
  const res = await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
  return res.body.build.id;
}

/** Builds that an interrupted claim left queued would be claimed first: cancel them. */
async function drainQueue(): Promise<void> {
  const queued = await t.db.execute("SELECT id FROM builds WHERE status = 'queued'");
  for (const row of queued.rows) await transitionBuild(t.ctx, String(row.id), "cancel");
}

async function runningJob() {
  await drainQueue();
  const buildId = await queuedBuild();
  const claimed = await claimJob(t.db, (await findRunner(t.db, runnerId))!, crypto.randomUUID(), t.clock.now(), 30);
  expect(claimed?.build.id).toBe(buildId);
  return claimed!.job;
}

/**
 * Runs `change` against a database that fails at statement 1, 2, 3, … of its transaction, each on
 * a fresh `prepare()`d scenario, until the change gets through. Every interrupted attempt must
 * leave the database exactly as it was. Returns how many statements the change has.
 */
async function interruptAtEveryStatement<S>(
  prepare: () => Promise<S>,
  change: (db: Db, s: S) => Promise<unknown>,
  completed: (s: S) => Promise<void>,
): Promise<number> {
  for (let failAt = 1; failAt < 50; failAt++) {
    const scenario = await prepare();
    const before = await snapshotState(t.db);
    let interrupted = false;
    try {
      await change(failingAtStatement(t.db, failAt), scenario);
    } catch (error) {
      if (!(error instanceof InjectedFault)) throw error;
      interrupted = true;
    }
    if (!interrupted) {
      await completed(scenario);
      return failAt - 1;
    }
    expect(await snapshotState(t.db)).toEqual(before);
  }
  throw new Error("the change never completed");
}

describe("one transaction per state change", () => {
  test("a job finish interrupted between its writes leaves job and build running; retried, both finish", async () => {
    const statements = await interruptAtEveryStatement(
      runningJob,
      (db, job) => finishJob({ ...t.ctx, db }, job, { status: "succeeded", exit_code: 0 }),
      async (job) => {
        expect((await findJob(t.db, job.id))!.status).toBe("finished");
        expect((await findBuild(t.db, job.build_id))!.status).toBe("succeeded");
      },
    );
    expect(statements).toBeGreaterThanOrEqual(2);
  });

  test("a lost runner interrupted anywhere changes nothing; completed, the job is lost, the build failed, the log and an incident say so", async () => {
    const statements = await interruptAtEveryStatement(
      async () => {
        const job = await runningJob();
        t.clock.advance(31);
        return job;
      },
      (db, job) => loseJob({ ...t.ctx, db }, job),
      async (job) => {
        expect((await findJob(t.db, job.id))!.status).toBe("lost");
        expect((await findBuild(t.db, job.build_id))!).toMatchObject({ status: "failed", exit_code: -1 });
        const log = await t.db.execute({ sql: "SELECT text FROM build_logs WHERE build_id = ?", args: [job.build_id] });
        expect(String(log.rows.at(-1)!.text)).toContain("runner_lost");
        const incident = await t.db.execute({
          sql: "SELECT * FROM operator_incidents WHERE resource_id = ? AND reason = 'runner_lost' AND status = 'open'",
          args: [runnerId],
        });
        expect(incident.rows.length).toBe(1);
      },
    );
    expect(statements).toBeGreaterThanOrEqual(4);
  });

  test("a timeout interrupted anywhere changes nothing; completed, the build failed with reason timeout, the log says so, and the runner hears to stop", async () => {
    const statements = await interruptAtEveryStatement(
      async () => {
        const job = await runningJob();
        t.clock.advance(3600 + 30);
        return job;
      },
      (db, job) => timeOutBuild({ ...t.ctx, db }, job, 3600),
      async (job) => {
        const build = (await findBuild(t.db, job.build_id))!;
        expect(build).toMatchObject({ status: "failed", exit_code: 124, failure_reason: "timeout: the build ran past its timeout of 60 min" });
        const log = await t.db.execute({ sql: "SELECT text FROM build_logs WHERE build_id = ?", args: [job.build_id] });
        expect(String(log.rows.at(-1)!.text)).toBe("[roost] timeout: the build ran past its timeout of 60 min; Roost failed it and its runner stops it.");
        // As after a cancel, the job runs on until its runner stops it; its finish no longer moves the build.
        expect((await findJob(t.db, job.id))!.status).toBe("running");
        expect((await heartbeat(t.db, runnerId, [job.id], t.clock.now(), 30)).cancel).toEqual([job.id]);
        await finishJob(t.ctx, job, { status: "canceled", exit_code: 130 });
        expect((await findBuild(t.db, job.build_id))!.status).toBe("failed");
      },
    );
    expect(statements).toBeGreaterThanOrEqual(2);
  });

  test("the background check fails a build only once it is past its timeout plus one lease", async () => {
    await drainQueue();
    const pipeline = await createPipeline(t, owner, projectId, { execution_config: { timeout_seconds: 120 } });
    const res = await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    const claimed = (await claimJob(t.db, (await findRunner(t.db, runnerId))!, crypto.randomUUID(), t.clock.now(), 30))!;
    expect(claimed.build.id).toBe(res.body.build.id);
    t.clock.advance(120 + 29);
    await heartbeat(t.db, runnerId, [claimed.job.id], t.clock.now(), 30);
    // (Builds the tests above left running are long past the default 60 minutes: they fail here.)
    await reapTimedOutBuilds(t.ctx);
    expect((await findBuild(t.db, claimed.build.id))!.status).toBe("running");
    t.clock.advance(1);
    expect(await reapTimedOutBuilds(t.ctx)).toBe(1);
    const body = (await t.call("GET", `/v1/builds/${claimed.build.id}`, { token: owner })).body.build;
    expect(body).toMatchObject({ status: "failed", exit_code: 124, failure_reason: "timeout: the build ran past its timeout of 2 min" });
    expect(await reapTimedOutBuilds(t.ctx)).toBe(0);
  });

  test("a claim interrupted anywhere leaves the build queued and no job; completed, the build runs its one job", async () => {
    await interruptAtEveryStatement(
      async () => {
        await drainQueue();
        return { buildId: await queuedBuild(), claimId: crypto.randomUUID() };
      },
      async (db, s) => claimJob(db, (await findRunner(t.db, runnerId))!, s.claimId, t.clock.now(), 30),
      async (s) => {
        expect((await findBuild(t.db, s.buildId))!.status).toBe("running");
        const jobs = await t.db.execute({ sql: "SELECT status FROM jobs WHERE build_id = ?", args: [s.buildId] });
        expect(jobs.rows.map((r) => r.status)).toEqual(["running"]);
      },
    );
  });

  test("a step report interrupted anywhere records nothing; completed, the step is in step_results", async () => {
    await interruptAtEveryStatement(
      runningJob,
      (db, job) => recordStepResult(db, job.build_id, { name: "build", status: "succeeded", exit_code: 0, started_at: 1, finished_at: 2, duration_ms: 1000 }),
      async (job) => {
        expect((await findBuild(t.db, job.build_id))!.step_results.map((s) => s.name)).toEqual(["build"]);
      },
    );
  });

  test("a re-run interrupted anywhere creates no build and takes no number; completed, it gets the next number", async () => {
    await interruptAtEveryStatement(
      async () => {
        const job = await runningJob();
        await finishJob(t.ctx, job, { status: "failed", exit_code: 1 });
        return (await findBuild(t.db, job.build_id))!;
      },
      (db, source) =>
        createBuild(
          { ...t.ctx, db },
          {
            pipelineId: source.pipeline_id,
            branch: source.branch,
            commitSha: source.commit_sha,
            triggerType: "rerun",
            sourceBuildId: source.id,
            configSnapshot: source.config_snapshot,
          },
        ),
      async (source) => {
        const reruns = await t.db.execute({ sql: "SELECT build_number FROM builds WHERE source_build_id = ?", args: [source.id] });
        expect(reruns.rows.length).toBe(1);
      },
    );
  });
});

describe("the finish is one write guarded by what it read", () => {
  const outboxOf = async (buildId: string) => ({
    notifications: (await t.db.execute({ sql: "SELECT status FROM notification_outbox WHERE build_id = ?", args: [buildId] })).rows.map((r) => r.status),
    job: (await t.db.execute({ sql: "SELECT status FROM jobs WHERE build_id = ?", args: [buildId] })).rows.map((r) => r.status),
  });

  test("a build canceled between the finish's read and its write stays canceled: the job finishes, the runner's Flutter SDK is recorded, no success is announced", async () => {
    const job = await runningJob();
    const read = (await findBuild(t.db, job.build_id))!;
    await transitionBuild(t.ctx, job.build_id, "cancel");
    const sdk = { requested: "3.24.5", version: "3.24.5", source: "path" as const, revision: null };
    const result = await finishJob(t.ctx, job, { status: "succeeded", exit_code: 0, flutter_sdk: sdk }, read);
    expect(result.finished).toBe(true);
    expect(result.build).toMatchObject({ id: job.build_id, status: "canceled", exit_code: null, flutter_sdk: sdk });
    expect(await outboxOf(job.build_id)).toEqual({ notifications: ["canceled"], job: ["finished"] });
  });

  test("an environment changed between the finish's plan and its write: the build's deployment follows the environment as it is now", async () => {
    await drainQueue();
    await putEnvironment(t, owner, projectId, "guarded", { requires_approval: false });
    const publish = [
      { type: "google_play", name: "play", environment: "guarded", package_name: "com.example.app", track: "internal", notes: { text: "Fixes" } },
    ];
    const pipeline = await createPipeline(t, owner, projectId, { execution_config: { publish } });
    await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    const { job } = (await claimJob(t.db, (await findRunner(t.db, runnerId))!, crypto.randomUUID(), t.clock.now(), 30))!;
    expect((await uploadArtifact(t, { id: runnerId, token: runnerToken }, job.id, "app-release.aab", "bundle")).up.status).toBe(201);
    // A maintainer requires approval just before the finish's first write batch reaches the database.
    let changed = false;
    const db: Db = new Proxy(t.db, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (key === "batch")
          return async (stmts: Parameters<Db["batch"]>[0]) => {
            if (!changed) await putEnvironment(t, owner, projectId, "guarded", { requires_approval: (changed = true) });
            return target.batch(stmts);
          };
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    expect((await finishJob({ ...t.ctx, db }, job, { status: "succeeded", exit_code: 0 })).build).toMatchObject({ status: "succeeded" });
    const deployments = (await t.call("GET", `/v1/builds/${job.build_id}/deployments`, { token: owner })).body.deployments;
    expect(deployments.map((d: { status: string }) => d.status)).toEqual(["waiting_approval"]);
  });

  test("two finishes of one job at once: one finishes it, the other answers the build as it is, and the build is announced once", async () => {
    const job = await runningJob();
    const [a, b] = await Promise.all([finishJob(t.ctx, job, { status: "succeeded", exit_code: 0 }), finishJob(t.ctx, job, { status: "failed", exit_code: 1 })]);
    expect([a.finished, b.finished].sort()).toEqual([false, true]);
    const status = a.finished ? "succeeded" : "failed";
    expect(a.build!.status).toBe(status);
    expect(b.build!.status).toBe(status);
    expect(await outboxOf(job.build_id)).toEqual({ notifications: [status], job: ["finished"] });
  });
});
