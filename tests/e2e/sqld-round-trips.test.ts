// Round trips to a libSQL server per runner request (docs/benchmarks.md "Three daemons on one sqld
// under 100 runners"): on several hosts each request to sqld is a network round trip, and the ones
// made while holding its write lock are what three daemons queue for. The in-process app talks
// Hrana over HTTP to sqld through a stand-in that counts the requests (tests/support/sqld-request-counter.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { createPipeline, SHA_A, signedAcmePush, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import { startSqld, type Sqld } from "../support/sqld.ts";
import { startSqldRequestCounter, type SqldRequestCounter } from "../support/sqld-request-counter.ts";
import { all } from "../../lib/db/client.ts";
import { appHoldingBatches } from "../helpers/held-batches.ts";
import { appendLogLines, readLogPosition, type AppendResult } from "../../lib/logs/store.ts";

let sqld: Sqld;
let counter: SqldRequestCounter;
let fixture: CiFixture;

beforeAll(async () => {
  sqld = await startSqld();
  counter = startSqldRequestCounter(sqld.url);
  fixture = await startCiFixture({ ROOST_DATABASE_URL: counter.url });
});
afterAll(async () => {
  await fixture?.stop();
  counter?.stop();
  await sqld?.stop();
  if (sqld) rmSync(join(sqld.dir, ".."), { recursive: true, force: true });
});

async function runner() {
  const { t, owner } = fixture;
  const created = await t.call("POST", "/v1/runners", { token: owner, body: { name: `r-${crypto.randomUUID().slice(0, 6)}` } });
  const { id } = created.body.runner;
  const token: string = created.body.token;
  await t.call("POST", `/v1/runners/${id}/connect`, { token, body: { capabilities: { os: "linux", arch: "x64" }, version: "test" } });
  return (path: string, body: unknown) => t.call("POST", `/v1/runners/${id}${path}`, { token, body });
}

describe("round trips to sqld per runner request", () => {
  // Before (main at 95d98a7): a claim 13 requests of which 7 held the write lock (BEGIN, the earlier
  // claim, the routes, the next build, the build's start, its commit status, the job, COMMIT); an
  // append of 25 lines 6 and 3; a heartbeat 3 and 1; a finish 9 and 6 (8 and 5 without an environment to record).
  test("a claim, an append and a heartbeat each hold sqld's write lock for one request, and make few others", async () => {
    const { t, owner, projectId } = fixture;
    const pipeline = await createPipeline(t, owner, projectId);
    for (let i = 0; i < 2; i++)
      await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    // Connected in this second (the test clock stands still): no call below writes last_seen_at.
    const call = await runner();
    const lines = Array.from({ length: 25 }, (_, n) => ({ step: "build", text: `line ${n}` }));
    for (let build = 0; build < 2; build++) {
      let claim: any;
      const claimed = await counter.count(async () => (claim = await call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 })));
      expect(claim.status).toBe(201);
      const jobId = claim.body.job.job_id;
      let append: any;
      const appended = await counter.count(async () => (append = await call(`/jobs/${jobId}/logs`, { first_line: 0, lines })));
      expect(append.status).toBe(202);
      expect(append.body.accepted).toBe(25);
      let beat: any;
      const beaten = await counter.count(async () => (beat = await call("/heartbeat", { job_ids: [jobId] })));
      expect(beat.body).toMatchObject({ renewed: [jobId], cancel: [] });
      // The runner's token (1), the earlier claim and the routes (1), the claim with the job's
      // repository, integration and variables read in its batch (1). (4 before 2026-11-27: the
      // payload was read in a request of its own after the claim.) The second claim, within a
      // second of the first one's look at the queue's routes, goes straight to its batch, which
      // holds the runner's token as the first claim read it (1: 2 before, the token read first),
      // unless this loaded machine took longer (lib/runners/jobs.ts ROUTES_KEPT_MS), when the token
      // is read as before (3).
      expect(claimed.writes).toBe(1);
      if (build === 0) expect(claimed.requests).toBe(3);
      else expect([1, 3]).toContain(claimed.requests);
      // The token with, beside it, the job with its build's status and the job's and build's log
      // positions (1, lib/logs/append-endpoint.ts prefetch), the write (1). (3 earlier on
      // 2026-11-27: the job and positions after the token; 4 before: the positions in a request of
      // their own; 5 before 2026-11-26's last change: the build's status was read after the write.)
      expect(appended).toEqual({ requests: 2, writes: 1 });
      // The runner's next append of the job: its write batch alone, which holds the runner's token
      // and the job as the first append read them (lib/logs/append-endpoint.ts RememberedWriter).
      let again: any;
      const appendedAgain = await counter.count(async () => (again = await call(`/jobs/${jobId}/logs`, { first_line: 25, lines })));
      expect(again.body).toEqual({ next_line: 50, last_seq: 50, accepted: 25 });
      expect(again.headers.get("x-roost-job-status")).toBe("running");
      expect(appendedAgain).toEqual({ requests: 1, writes: 1 });
      // The token (1), the renewal with the jobs' state (1).
      expect(beaten).toEqual({ requests: 2, writes: 1 });
      let finish: any;
      const finished = await counter.count(
        async () =>
          (finish = await call(`/jobs/${jobId}/finish`, {
            status: "succeeded",
            exit_code: 0,
            line_count: 50,
            flutter_sdk: { requested: "3.24.5", version: "3.24.5", source: "path", revision: null },
          })),
      );
      expect(finish.body.build).toMatchObject({ status: "succeeded", flutter_sdk: { version: "3.24.5" } });
      // The guarded write batch planned from the build as this daemon's claim started it, the
      // runner's token as the claim read it held in its guard: what follows the transition, the
      // Flutter SDK, the transition RETURNING the build, the job (1). (2 before: the token was
      // read first; 3 before 2026-11-27: the job and its build were read first too.)
      expect(finished).toEqual({ requests: 1, writes: 1 });
    }
  });
});

describe("statements sqld prepares for log appends", () => {
  // Before (main at 5f3896e): 3 statements an append, 24 for these 8, each prepared by sqld afresh
  // (docs/benchmarks.md, "Log appends on sqld: merged statements").
  test("appends of 8 jobs waiting together send sqld 3 statements between them: the jobs' next lines, the lines, the builds' stats", async () => {
    const { t, owner, projectId } = fixture;
    const pipeline = await createPipeline(t, owner, projectId, { concurrency: { max_concurrent: 50 } });
    const jobs: Array<{ jobId: string; buildId: string }> = [];
    for (let i = 0; i < 8; i++) {
      await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
      const call = await runner();
      const claim = await call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 });
      expect(claim.status).toBe(201);
      jobs.push({ jobId: claim.body.job.job_id, buildId: claim.body.job.build.id });
    }
    // Where each job stands, as the append endpoint reads it beside the job (lib/logs/append-endpoint.ts).
    const known = await Promise.all(jobs.map((job) => readLogPosition(t.db, "jobs", job.jobId)));
    const lines = (j: number) => Array.from({ length: 25 }, (_, n) => ({ step: "build", stream: "stdout" as const, text: `job ${j} line ${n}` }));
    let answers: AppendResult[] = [];
    const sent = await counter.statements(async () => {
      // Started in one turn of the event loop: they wait together.
      answers = await Promise.all(jobs.map((job, j) => appendLogLines(t.db, job.jobId, job.buildId, 0, lines(j), t.clock.now(), 1 << 20, "jobs", known[j]!)));
    });
    expect(answers.map((a) => a.kind === "ok" && a.accepted)).toEqual(Array(8).fill(25));
    expect(sent).toBe(3);
    for (const [j, job] of jobs.entries()) {
      const stored = await all(t.db, "SELECT text FROM build_logs WHERE job_id = ? ORDER BY line", [job.jobId]);
      expect(stored.map((r) => r.text)).toEqual(lines(j).map((l) => l.text));
    }
  });
});

describe("statements sqld prepares for the reads of log appends", () => {
  // Before (main at ac7d8f9): 3 reads an append (the runner's token, the job with its build's
  // status, the job's log position), 24 for these 8, each prepared by sqld afresh.
  test("appends of 8 runners arriving together read their tokens in one statement and their jobs (status and log position with them) in another", async () => {
    const { t, owner, projectId } = fixture;
    const pipeline = await createPipeline(t, owner, projectId, { concurrency: { max_concurrent: 50 } });
    const appends: Array<() => Promise<any>> = [];
    for (let i = 0; i < 8; i++) {
      await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
      const call = await runner();
      const claim = await call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 });
      expect(claim.status).toBe(201);
      appends.push(() => call(`/jobs/${claim.body.job.job_id}/logs`, { first_line: 0, lines: [{ step: "build", text: `job ${i}` }] }));
    }
    let answers: any[] = [];
    const sent = await counter.statements(async () => (answers = await Promise.all(appends.map((append) => append()))));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(202));
    // The tokens (1) and the jobs (1), read together (lib/db/grouped-read.ts); the merged write (3).
    expect(sent).toBe(5);
  });
});

describe("round trips to sqld per webhook push", () => {
  /** A GitHub push of one commit to `branch` of acme/app, signed with the integration's webhook secret. */
  async function push(branch: string, sha: string, delivery: string) {
    const { body, headers } = await signedAcmePush(branch, sha, delivery);
    return fixture.t.call("POST", "/v1/webhooks/github", { raw: body, contentType: "application/json", headers, peer: "140.82.112.1" });
  }

  // Before (main at 38d13d4): a push that builds 19 requests, 13 of them holding the write lock
  // (BEGIN with the expired digest's delete, the keys' check, each key's insert, the project, its
  // pipelines, the pipeline, the build number, the queue place, the build, its commit status, the
  // delivery, COMMIT); its redelivery 10 and 4 (the transaction that found the key, ROLLBACK, the record).
  test("a push that builds holds sqld's write lock for one request, and so does its redelivery's record", async () => {
    const { t, owner, projectId } = fixture;
    await createPipeline(t, owner, projectId, { trigger_config: { branches: ["feature/**"] } });
    const built: number[] = [];
    for (let i = 0; i < 2; i++) {
      const delivery = crypto.randomUUID();
      const sha = `${i + 1}`.repeat(40);
      let res: any;
      const pushed = await counter.count(async () => (res = await push(`feature/${i}`, sha, delivery)));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ ok: true, duplicate: false });
      expect(res.body.builds).toHaveLength(1);
      built.push(res.body.builds[0].build_number);
      // The first push: the integrations with the repository the body names (1, the receiver's
      // verification and routing), the project and its pipelines (1), both of which this daemon
      // keeps for the next push; the write: the delivery with its dedupe keys read and taken, the
      // build with its number and commit status (1), guarded by what was kept. (3 for both before
      // 2026-11-27 07:10: the dedupe keys were read first, with the project when it was read; and
      // the integrations were read on every push before 07:40.)
      expect(pushed).toEqual({ requests: i === 0 ? 3 : 1, writes: 1 });
      let again: any;
      const redelivered = await counter.count(async () => (again = await push(`feature/${i}`, sha, delivery)));
      expect(again.body).toMatchObject({ ok: true, duplicate: true, builds: [] });
      // The write (1), which finds a key held and records the duplicate. (3 before 2026-11-27
      // 07:10: the integrations and the keys were read first, and the duplicate's record written after.)
      expect(redelivered).toEqual({ requests: 1, writes: 1 });
    }
    // Gap-free: the counter moved in the same write as each build.
    expect(built[1]).toBe(built[0]! + 1);
    const delivery = (await t.call("GET", `/v1/webhook-deliveries?limit=1&result=built`, { token: owner })).body.deliveries[0];
    const decision = delivery.decisions.find((d: { build: boolean }) => d.build);
    expect(decision).toMatchObject({ build_number: built[1], reason: `branch feature/1 matches feature/** in [feature/**]: build #${built[1]}` });
  });

  // Before (main at b63ecf8): 9 statements, the write batch 6 of them (the delivery, its keys, the
  // build number, the queue place, the build, its commit status). sqld prepares every statement
  // afresh, about 150 µs of its CPU each whatever its text; a trigger is prepared with the
  // statement that fires it (schema.sql migration 44).
  test("a push that builds sends sqld 2 statements, its write batch: the delivery and the build (what follows them written by their triggers), guarded by what this daemon last read", async () => {
    const { t, owner, projectId } = fixture;
    await createPipeline(t, owner, projectId, { trigger_config: { branches: ["few/**"] } });
    // The first push after a pipeline's change reads the project and pipelines again; this daemon keeps them.
    await push("few/0", "a".repeat(40), crypto.randomUUID());
    let res: any;
    const sent = await counter.statements(async () => (res = await push("few/1", "b".repeat(40), crypto.randomUUID())));
    expect(res.body.builds).toHaveLength(1);
    // The delivery with its dedupe keys (read and taken) and the build with its number, queue place
    // and commit status (2), guarded by the integrations and the project as this daemon last read
    // them. (5 at 2026-11-27 07:00: the receiver's integrations and the repository the body names,
    // and the dedupe keys, were read before the batch.)
    expect(sent).toBe(2);
    const build = res.body.builds[0];
    expect(await all(t.db, "SELECT build_number, status FROM commit_status_outbox WHERE build_id = ?", [build.id])).toEqual([
      { build_number: build.build_number, status: "queued" },
    ]);
  });

  // Before (main at 9122f26): 2 statements a push, 16 for these 8, each prepared by sqld afresh and
  // costing it more than the rows it writes (docs/benchmarks.md, "Webhook pushes on sqld: merged batches").
  test("pushes whose write batches wait together send sqld 2 statements between them: their deliveries, and their builds", async () => {
    const { t, owner, projectId } = fixture;
    await createPipeline(t, owner, projectId, { trigger_config: { branches: ["merged/**"] } });
    const held = appHoldingBatches(t);
    const send = async (branch: string, sha: string) => {
      const signed = await signedAcmePush(branch, sha, crypto.randomUUID());
      const headers = { host: "127.0.0.1:8080", "content-type": "application/json", ...signed.headers };
      const res = await held.app.fetch(new Request("http://127.0.0.1:8080/v1/webhooks/github", { method: "POST", headers, body: signed.body }), "140.82.112.1");
      return (await res.json()) as any;
    };
    // This daemon reads the catalogue, project and pipelines on its first push, and keeps them.
    await send("merged/0", "c".repeat(40));
    let answers: any[] = [];
    const sent = await counter.statements(async () => {
      held.holdNext(8);
      answers = await Promise.all(Array.from({ length: 8 }, (_, i) => send(`merged/${i + 1}`, `${i + 1}`.repeat(40))));
    });
    expect(answers.map((a) => a.builds.length)).toEqual(Array(8).fill(1));
    expect(sent).toBe(2);
    const numbers = answers.map((a) => a.builds[0].build_number).sort((a, b) => a - b);
    expect(numbers).toEqual(numbers.map((_, i) => numbers[0] + i));
  });

  // Before 2026-11-27 each request opened a stream of its own, and sqld a connection for it: set
  // up, the whole schema read, every statement prepared afresh (lib/db/kept-streams.ts).
  test("pushes after the first open no connection on sqld: their reads and write batches go on streams kept open", async () => {
    const { t, owner, projectId } = fixture;
    await createPipeline(t, owner, projectId, { trigger_config: { branches: ["kept/**"] } });
    await push("kept/0", "5".repeat(40), crypto.randomUUID());
    const opened = await counter.opened(async () => {
      for (let i = 1; i <= 3; i++) {
        const res = await push(`kept/${i}`, `${i + 5}`.repeat(40), crypto.randomUUID());
        expect(res.body.builds).toHaveLength(1);
      }
    });
    expect(opened).toBe(0);
  });

  // Before (main at 38d13d4) such a push went through the same transaction, with the cancel and what
  // follows it (commit status, notification) inside the write lock too.
  test("a push that cancels the older build of its branch (cancel_previous) still holds the lock for one request", async () => {
    const { t, owner, projectId } = fixture;
    await createPipeline(t, owner, projectId, { trigger_config: { branches: ["cancel/**"] }, concurrency: { cancel_previous: true, max_concurrent: 5 } });
    const first = await push("cancel/x", "3".repeat(40), crypto.randomUUID());
    let second: any;
    const pushed = await counter.count(async () => (second = await push("cancel/x", "4".repeat(40), crypto.randomUUID())));
    // The write (1): the integrations, project and pipelines as the first push read them.
    expect(pushed).toEqual({ requests: 1, writes: 1 });
    const older = (await t.call("GET", `/v1/builds/${first.body.builds[0].id}`, { token: owner })).body.build;
    expect(older).toMatchObject({ status: "canceled", failure_reason: `superseded by build #${second.body.builds[0].build_number}` });
  });
});
