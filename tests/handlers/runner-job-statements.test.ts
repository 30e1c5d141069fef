// A runner's claim and finish in as few statements as their work allows (issue 20: the daemon's CPU
// per job; docs/benchmarks.md "The runner fleet's CPU per job"). Each statement a request hands
// the database costs its own run, and a read outside a transaction its own look at the WAL; the
// counts are of the statements the app hands its database, a batch's one by one.
import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { Database } from "bun:sqlite";
import { ClaimRequest, FinishRequest } from "../../lib/runners/protocol-wire.ts";
import { SHA_A, createPipeline, daemonOnSameDatabase, startCiFixture, type CiFixture } from "../helpers/ci.ts";

let fixture: CiFixture;
const statements: string[] = [];
/** The statements with their arguments, as run. */
const withArgs: { sql: string; args: unknown[] }[] = [];
/** The length of each write batch, in the order run. */
const batches: number[] = [];

beforeAll(async () => {
  fixture = await startCiFixture();
  const db = fixture.t.db;
  const { execute, batch } = db;
  const record = (stmt: { sql?: string; args?: unknown } | string) => {
    statements.push((typeof stmt === "string" ? stmt : (stmt.sql ?? "")).replace(/\s+/g, " ").trim());
    if (typeof stmt !== "string") withArgs.push({ sql: stmt.sql ?? "", args: Array.isArray(stmt.args) ? stmt.args : [] });
  };
  db.execute = (stmt, ...rest) => {
    record(stmt);
    return execute.call(db, stmt, ...rest);
  };
  db.batch = (stmts) => {
    for (const stmt of stmts) record(stmt);
    batches.push(stmts.length);
    return batch.call(db, stmts);
  };
});
afterAll(() => fixture.stop());

/** `work` with a second daemon (a test app of its own) on the fixture's database, closed after. */
async function besideAnotherDaemon(work: (other: Awaited<ReturnType<typeof daemonOnSameDatabase>>) => Promise<void>): Promise<void> {
  const other = await daemonOnSameDatabase(fixture, {});
  try {
    await work(other);
  } finally {
    other.close();
  }
}

async function statementsOf<T>(work: () => Promise<T>): Promise<{ result: T; run: string[]; batches: number[] }> {
  statements.length = 0;
  batches.length = 0;
  const result = await work();
  return { result, run: [...statements], batches: [...batches] };
}

describe("a job's claim and finish", () => {
  test("the claim reads the job's payload in its write batch, in three statements; the finish of a job claimed here reads nothing first", async () => {
    const { t, owner, projectId } = fixture;
    const pipeline = await createPipeline(t, owner, projectId);
    await t.call("PUT", `/v1/projects/${projectId}/variables/APP_FLAVOR`, { token: owner, body: { value: "production" } });
    await t.call("PUT", `/v1/projects/${projectId}/variables/API_URL`, { token: owner, body: { value: "https://api.example.test" } });
    await t.call("PUT", `/v1/pipelines/${pipeline.id}/variables/APP_FLAVOR`, { token: owner, body: { value: "staging" } });
    await t.call("PUT", `/v1/pipelines/${pipeline.id}/variables/CHANNEL`, { token: owner, body: { value: "beta" } });
    const build = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
      .build;
    const made = await t.call("POST", "/v1/runners", { token: owner, body: { name: "statements" } });
    const { id } = made.body.runner;
    const token: string = made.body.token;
    const call = (path: string, body: unknown) => t.call("POST", `/v1/runners/${id}${path}`, { token, body });
    // Connected in this second (the test clock stands still): no request below records last_seen_at.
    await call("/connect", { capabilities: { os: "linux", arch: "x64" }, version: "test" });

    const claimId = crypto.randomUUID();
    const claim = await statementsOf(() => call("/jobs/claim", { claim_id: claimId, wait_seconds: 0 }));
    expect(claim.result.status).toBe(201);
    const job = claim.result.body.job;
    expect(job.build).toMatchObject({ id: build.id, repository_full_name: "acme/app", default_branch: "main" });
    // The project's variables by key, then the pipeline's, whose APP_FLAVOR replaces the project's.
    expect(job.config.execution_config.env.map((e: { key: string; value: string }) => [e.key, e.value])).toEqual([
      ["API_URL", "https://api.example.test"],
      ["APP_FLAVOR", "staging"],
      ["CHANNEL", "beta"],
    ]);
    // The runner (1), an earlier claim with this claim_id and the routes (2), then the claim's
    // write batch (7): the job, the build's start and its commit status, the job read back, and
    // the payload: the repository with its project's default branch, the integration, and the
    // variables of the project and the pipeline. Nothing is read after the batch. (12 before: the
    // payload was 5 reads after the batch, the project and its repository apart, and each scope's
    // variables in a statement of its own.)
    expect(claim.run).toHaveLength(10);
    expect(claim.batches).toEqual([7]);
    expect(claim.run.slice(-3).map((sql) => /FROM builds b JOIN (projects|variables)/.test(sql))).toEqual([true, true, true]);
    // The same job again for the same claim_id (a lost answer), its payload read apart, alike.
    const again = await statementsOf(() => call("/jobs/claim", { claim_id: claimId, wait_seconds: 0 }));
    expect(again.result.body.job).toEqual(job);
    expect(again.run.slice(-3).map((sql) => /FROM builds b JOIN (projects|variables)/.test(sql))).toEqual([true, true, true]);

    const finish = await statementsOf(() => call(`/jobs/${job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 }));
    expect(finish.result.status).toBe(200);
    expect(finish.result.body.build).toMatchObject({ id: build.id, status: "succeeded", exit_code: 0 });
    expect(finish.result.body.build.finished_at).toBe(t.clock.now());
    // The guarded batch planned from the build as this process's claim started it (4): what
    // follows the transition (the commit status and the notification), the transition RETURNING
    // the build, the job; the runner, as the claim read it, held in the batch's guard. (7 before:
    // the job and its build were read first, and the build read back after the transition had
    // returned it; 5 before that guard: the runner was read first.)
    expect(finish.batches).toEqual([4]);
    expect(finish.run).toHaveLength(4);
    expect(finish.run.filter((sql) => sql.startsWith("SELECT"))).toEqual([]);
    // All but the job's, which follows the transition's having written (changes()).
    expect(finish.run.map((sql) => sql.includes("FROM runners WHERE id = +?"))).toEqual([true, true, true, false]);
    const stored = (await t.call("GET", `/v1/builds/${build.id}`, { token: owner })).body.build;
    expect(finish.result.body.build).toEqual(stored);
  });

  test("a claim within a second of this daemon's look at the queue's routes goes straight to its batch; one that takes nothing so looks again", async () => {
    const { t, owner, projectId } = fixture;
    const pipeline = await createPipeline(t, owner, projectId, { concurrency: { max_concurrent: 2 } });
    const gpu = await createPipeline(t, owner, projectId, { execution_config: { runner_labels: ["gpu"] } });
    const queue = async (on: { id: string }) =>
      (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: on.id, commit_sha: SHA_A } })).body.build;
    const [first, second, third] = [await queue(pipeline), await queue(pipeline), await queue(pipeline)];
    const made = await t.call("POST", "/v1/runners", { token: owner, body: { name: "kept-routes", labels: ["gpu"] } });
    const call = (path: string, body: unknown) => t.call("POST", `/v1/runners/${made.body.runner.id}${path}`, { token: made.body.token, body });
    await call("/connect", { capabilities: { os: "linux", arch: "x64" }, version: "test" });
    // The routes are kept for ROUTES_KEPT_MS by performance.now() (lib/runners/jobs.ts). Its clock
    // stops here, past any earlier look, so the claims below are all "within a second" of the
    // look however slowly a loaded host runs them (a real second between two claims would read
    // the routes again and change the counts).
    const past = performance.now() + 1_100;
    const clock = spyOn(performance, "now").mockImplementation(() => past);
    try {
      const claim = () => statementsOf(() => call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 }));
      const looked = await claim();
      expect(looked.result.body.job.build.id).toBe(first.id);
      expect(looked.run).toHaveLength(10);
      // The batch (7) alone: no earlier claim and no routes read, the runner as the claim before read it held in the batch.
      const straight = await claim();
      expect(straight.result.body.job.build.id).toBe(second.id);
      expect(straight.run).toHaveLength(7);
      expect(straight.batches).toEqual([7]);
      // The pipeline is full: the batch takes nothing, the routes read are those it tried, no second batch.
      const full = await claim();
      expect(full.result.status).toBe(204);
      expect(full.batches).toEqual([7]);
      // A build of a route the kept routes lack (a label): the batch with the kept ones takes
      // nothing, the routes are read again, and a second batch takes it.
      const labelled = await queue(gpu);
      const again = await claim();
      expect(again.result.body.job.build.id).toBe(labelled.id);
      expect(again.batches).toEqual([7, 7]);
      for (const b of [first, second, third, labelled]) await t.call("POST", `/v1/builds/${b.id}/cancel`, { token: owner });
    } finally {
      clock.mockRestore();
    }
  });

  test("a claim's and a finish's bodies that plainly fit are taken without zod; others are still refused in the schema's words", async () => {
    // zod binds safeParse at its first read, after which it can be spied on.
    void [ClaimRequest.safeParse, FinishRequest.safeParse];
    const parses = [spyOn(ClaimRequest, "safeParse"), spyOn(FinishRequest, "safeParse")];
    try {
      const { job, call } = await claimedJob();
      const finished = await call(`/jobs/${job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 });
      expect(finished.status).toBe(200);
      for (const parse of parses) expect(parse).toHaveBeenCalledTimes(0);
      const bad = await call("/jobs/claim", { claim_id: "short", wait_seconds: 0 });
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe("invalid_request");
      expect(bad.body.message).toContain("claim_id");
      expect(parses[0]).toHaveBeenCalledTimes(1);
    } finally {
      for (const parse of parses) parse.mockRestore();
    }
  });

  /** A queued build of a new pipeline, claimed by a new runner of `on` (the fixture's app unless another). */
  async function claimedJob(on = fixture.t) {
    const { t, owner, projectId } = fixture;
    const pipeline = await createPipeline(t, owner, projectId);
    const build = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
      .build;
    const made = await t.call("POST", "/v1/runners", { token: owner, body: { name: `r-${crypto.randomUUID().slice(0, 6)}` } });
    const runner = (app: typeof t) => (path: string, body: unknown) =>
      app.call("POST", `/v1/runners/${made.body.runner.id}${path}`, { token: made.body.token, body });
    await runner(on)("/connect", { capabilities: { os: "linux", arch: "x64" }, version: "test" });
    const claimId = crypto.randomUUID();
    const job = (await runner(on)("/jobs/claim", { claim_id: claimId, wait_seconds: 0 })).body.job;
    expect(job.build.id).toBe(build.id);
    return { build, job, claimId, call: runner(t), runnerId: made.body.runner.id as string, token: made.body.token as string, on: runner };
  }

  test("a finish after its build was canceled writes nothing as claimed, then reads them: the build stays canceled", async () => {
    const { t, owner } = fixture;
    const { build, job, call } = await claimedJob();
    expect((await t.call("POST", `/v1/builds/${build.id}/cancel`, { token: owner })).status).toBe(200);
    const finish = await statementsOf(() => call(`/jobs/${job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 }));
    expect(finish.result.status).toBe(200);
    expect(finish.result.body.build).toMatchObject({ id: build.id, status: "canceled", exit_code: null });
    // The batch as claimed (its guard lost), the job with its build, the batch without a transition, whose last statement reads the build back.
    expect(finish.batches).toEqual([4, 2]);
    expect(finish.run.at(-1)).toBe("SELECT * FROM builds WHERE id = ?");
    expect((await t.call("GET", `/v1/builds/${build.id}`, { token: owner })).body.build.status).toBe("canceled");
  });

  test("another runner's finish of the job is refused and changes nothing; its own runner's finish then finishes it", async () => {
    const { t, owner } = fixture;
    const { build, job, call } = await claimedJob();
    const other = await t.call("POST", "/v1/runners", { token: owner, body: { name: `o-${crypto.randomUUID().slice(0, 6)}` } });
    const refused = await t.call("POST", `/v1/runners/${other.body.runner.id}/jobs/${job.job_id}/finish`, {
      token: other.body.token,
      body: { status: "succeeded", exit_code: 0, line_count: 0 },
    });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe("job_not_assigned");
    expect((await t.call("GET", `/v1/builds/${build.id}`, { token: owner })).body.build.status).toBe("running");
    const done = await call(`/jobs/${job.job_id}/finish`, { status: "failed", exit_code: 3, line_count: 0 });
    expect(done.body.build).toMatchObject({ id: build.id, status: "failed", exit_code: 3 });
  });

  test("a finish before Roost has every line is refused and changes nothing, as when the job is read first", async () => {
    const { t, owner } = fixture;
    const { build, job, call } = await claimedJob();
    await call(`/jobs/${job.job_id}/logs`, { first_line: 0, lines: [{ text: "one" }, { text: "two" }] });
    const early = await call(`/jobs/${job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 3 });
    expect(early.status).toBe(409);
    expect(early.body).toEqual({ code: "log_incomplete", message: "Roost has 2 of 3 lines; send the rest, then finish." });
    expect(early.headers.get("x-roost-log-next-line")).toBe("2");
    expect((await t.call("GET", `/v1/builds/${build.id}`, { token: owner })).body.build.status).toBe("running");
    await call(`/jobs/${job.job_id}/logs`, { first_line: 2, lines: [{ text: "three" }] });
    expect((await call(`/jobs/${job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 3 })).body.build.status).toBe("succeeded");
  });

  test("a claim and a finish hold the runner as this daemon last read it in their write: a token revoked or rotated through another daemon is refused by that very request, which changes nothing", async () => {
    const { t, owner, projectId } = fixture;
    await besideAnotherDaemon(async (other) => {
      const status = async (id: string) => (await t.call("GET", `/v1/builds/${id}`, { token: owner })).body.build.status;
      const queue = async () =>
        (
          await t.call("POST", `/v1/projects/${projectId}/builds`, {
            token: owner,
            body: { pipeline_id: (await createPipeline(t, owner, projectId)).id, commit_sha: SHA_A },
          })
        ).body.build;
      const as = (runnerId: string, token: string) => (path: string, body: unknown) => t.call("POST", `/v1/runners/${runnerId}${path}`, { token, body });

      // Rotated: the old token is refused by the claim and by the finish, the new one works.
      const rotatedRun = await claimedJob();
      const waiting = await queue();
      const rotated = await other.call("POST", `/v1/runners/${rotatedRun.runnerId}/token`, { token: owner });
      expect(rotated.status).toBe(201);
      const refusedFinish = await rotatedRun.call(`/jobs/${rotatedRun.job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 });
      expect(refusedFinish.status).toBe(401);
      expect(refusedFinish.body.code).toBe("invalid_token");
      expect(await status(rotatedRun.build.id)).toBe("running");
      const refusedClaim = await rotatedRun.call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 });
      expect(refusedClaim.status).toBe(401);
      expect(await status(waiting.id)).toBe("queued");
      const renewed = as(rotatedRun.runnerId, rotated.body.token);
      expect((await renewed(`/jobs/${rotatedRun.job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 })).body.build.status).toBe(
        "succeeded",
      );
      expect((await renewed("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 })).body.job.build.id).toBe(waiting.id);

      // Revoked, with a job of the same claim_id claimed before: not even that job is answered again.
      const revokedRun = await claimedJob();
      const next = await queue();
      const claimId = crypto.randomUUID();
      const taken = await revokedRun.call("/jobs/claim", { claim_id: claimId, wait_seconds: 0 });
      expect(taken.body.job.build.id).toBe(next.id);
      const left = await queue();
      expect((await other.call("DELETE", `/v1/runners/${revokedRun.runnerId}`, { token: owner })).status).toBe(200);
      expect((await revokedRun.call("/jobs/claim", { claim_id: claimId, wait_seconds: 0 })).status).toBe(401);
      expect((await revokedRun.call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 })).status).toBe(401);
      expect((await revokedRun.call(`/jobs/${taken.body.job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 })).status).toBe(401);
      expect(await status(left.id)).toBe("queued");
      expect(await status(next.id)).toBe("running");
      expect(await status(revokedRun.build.id)).toBe("running");
      // The next tests claim their own builds.
      expect((await t.call("POST", `/v1/builds/${left.id}/cancel`, { token: owner })).status).toBe(200);
    });
  });

  test("a runner's next append of a job appended to here refuses what a read first would: a token rotated or revoked, a job finished, through another daemon; a build being canceled is answered so", async () => {
    const { t, owner } = fixture;
    await besideAnotherDaemon(async (other) => {
      const lines = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ step: "build", text: `line ${from + i}` }));
      const stored = async (buildId: string) => (await t.call("GET", `/v1/builds/${buildId}/logs`, { token: owner })).body.map((l: { text: string }) => l.text);
      const appendedTwice = async () => {
        const run = await claimedJob();
        for (const first of [0, 2]) expect((await run.call(`/jobs/${run.job.job_id}/logs`, { first_line: first, lines: lines(first, 2) })).status).toBe(202);
        return run;
      };

      // A body not valid, and a gap: refused as a first append is, nothing stored; the job goes on from line 4.
      const badRun = await appendedTwice();
      const bad = await badRun.call(`/jobs/${badRun.job.job_id}/logs`, { first_line: 4, lines: "not a list" });
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe("invalid_request");
      const gap = await badRun.call(`/jobs/${badRun.job.job_id}/logs`, { first_line: 6, lines: lines(6, 2) });
      expect(gap.status).toBe(416);
      expect(gap.body.code).toBe("log_gap");
      expect(gap.headers.get("x-roost-log-next-line")).toBe("4");
      expect(await stored(badRun.build.id)).toEqual(["line 0", "line 1", "line 2", "line 3"]);
      expect((await badRun.call(`/jobs/${badRun.job.job_id}/logs`, { first_line: 4, lines: lines(4, 2) })).body).toEqual({
        next_line: 6,
        last_seq: 6,
        accepted: 2,
      });

      // Rotated: the old token is refused, nothing stored; the new one goes on from line 4.
      const rotatedRun = await appendedTwice();
      const rotated = await other.call("POST", `/v1/runners/${rotatedRun.runnerId}/token`, { token: owner });
      expect(rotated.status).toBe(201);
      const refused = await rotatedRun.call(`/jobs/${rotatedRun.job.job_id}/logs`, { first_line: 4, lines: lines(4, 2) });
      expect(refused.status).toBe(401);
      expect(refused.body.code).toBe("invalid_token");
      expect(await stored(rotatedRun.build.id)).toEqual(["line 0", "line 1", "line 2", "line 3"]);
      const renewed = await t.call("POST", `/v1/runners/${rotatedRun.runnerId}/jobs/${rotatedRun.job.job_id}/logs`, {
        token: rotated.body.token,
        body: { first_line: 4, lines: lines(4, 1) },
      });
      expect(renewed.body).toEqual({ next_line: 5, last_seq: 5, accepted: 1 });

      // Revoked (the runner removed): refused, nothing stored.
      const revokedRun = await appendedTwice();
      expect((await other.call("DELETE", `/v1/runners/${revokedRun.runnerId}`, { token: owner })).status).toBe(200);
      expect((await revokedRun.call(`/jobs/${revokedRun.job.job_id}/logs`, { first_line: 4, lines: lines(4, 2) })).status).toBe(401);
      expect(await stored(revokedRun.build.id)).toHaveLength(4);

      // The job finished through the other daemon: job_finished, nothing stored.
      const finishedRun = await appendedTwice();
      const finished = await finishedRun.on(other)(`/jobs/${finishedRun.job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 4 });
      expect(finished.body.build.status).toBe("succeeded");
      const late = await finishedRun.call(`/jobs/${finishedRun.job.job_id}/logs`, { first_line: 4, lines: lines(4, 2) });
      expect(late.status).toBe(410);
      expect(late.body.code).toBe("job_finished");
      expect(await stored(finishedRun.build.id)).toHaveLength(4);

      // The build being canceled through the other daemon: the lines are stored, and the answer says canceling.
      const canceledRun = await appendedTwice();
      expect((await other.call("POST", `/v1/builds/${canceledRun.build.id}/cancel`, { token: owner })).status).toBe(200);
      const told = await canceledRun.call(`/jobs/${canceledRun.job.job_id}/logs`, { first_line: 4, lines: lines(4, 2) });
      expect(told.status).toBe(202);
      expect(told.headers.get("x-roost-job-status")).toBe("canceling");
      expect(await stored(canceledRun.build.id)).toHaveLength(6);
    });
  });

  test("a job claimed through another daemon on the same database is read first, and finishes alike", async () => {
    const { t, owner } = fixture;
    await besideAnotherDaemon(async (other) => {
      const { build, job, call } = await claimedJob(other);
      const finish = await statementsOf(() => call(`/jobs/${job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 }));
      expect(finish.result.body.build).toMatchObject({ id: build.id, status: "succeeded" });
      // The runner (1), the job and its build (2), the batch (4).
      expect(finish.run).toHaveLength(7);
      expect(finish.batches).toEqual([4]);
      expect((await t.call("GET", `/v1/builds/${build.id}`, { token: owner })).body.build.status).toBe("succeeded");
    });
  });

  test("a token revoked or rotated through another daemon, remembered here, is refused with 401 whatever it asks, and its refused request writes nothing, not even when its runner was seen", async () => {
    const { t, owner } = fixture;
    await besideAnotherDaemon(async (other) => {
      const someoneElse = (await t.call("POST", "/v1/runners", { token: owner, body: { name: `e-${crypto.randomUUID().slice(0, 6)}` } })).body.runner.id;
      const asks: Record<string, (run: Awaited<ReturnType<typeof claimedJob>>) => ReturnType<typeof t.call>> = {
        claim: (run) => run.call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 }),
        finish: (run) => run.call(`/jobs/${run.job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 }),
        "a claim whose body is not valid": (run) => run.call("/jobs/claim", { claim_id: "short", wait_seconds: 0 }),
        "a claim on another runner's path": (run) =>
          t.call("POST", `/v1/runners/${someoneElse}/jobs/claim`, { token: run.token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } }),
      };
      for (const [what, ask] of Object.entries(asks)) {
        for (const change of ["revoked", "rotated"]) {
          // Claimed through this daemon, which so remembers the runner.
          const run = await claimedJob();
          const changed =
            change === "revoked"
              ? await other.call("DELETE", `/v1/runners/${run.runnerId}`, { token: owner })
              : await other.call("POST", `/v1/runners/${run.runnerId}/token`, { token: owner });
          expect(changed.status).toBeLessThan(300);
          const runners = async () => (await t.call("GET", "/v1/runners", { token: owner })).body.runners as { id: string; last_seen_at: number }[];
          const seen = (await runners()).find((r) => r.id === run.runnerId)!.last_seen_at;
          t.clock.advance(5);
          const refused = await ask(run);
          expect([what, change, refused.status, refused.body.code]).toEqual([what, change, 401, "invalid_token"]);
          expect((await runners()).find((r) => r.id === run.runnerId)!.last_seen_at).toBe(seen);
          expect((await t.call("GET", `/v1/builds/${run.build.id}`, { token: owner })).body.build.status).toBe("running");
          // No longer remembered: the old token's next request is refused after one read, as before any memory.
          const again = await statementsOf(() => ask(run));
          expect([what, change, again.result.status, again.run]).toEqual([what, change, 401, ["SELECT * FROM runners WHERE id = ?"]]);
        }
      }
    });
  });

  test("a claim that waits takes no build queued after its token was revoked or rotated through another daemon: it is refused, the build stays queued", async () => {
    const { t, owner, projectId } = fixture;
    await besideAnotherDaemon(async (other) => {
      for (const change of ["revoked", "rotated"]) {
        const run = await claimedJob();
        // Nothing is queued for it: the claim waits, re-reading the queue every second.
        const waiting = run.call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 4 });
        await Bun.sleep(200);
        const changed =
          change === "revoked"
            ? await other.call("DELETE", `/v1/runners/${run.runnerId}`, { token: owner })
            : await other.call("POST", `/v1/runners/${run.runnerId}/token`, { token: owner });
        expect(changed.status).toBeLessThan(300);
        // Queued here: this daemon wakes the waiting claim at once.
        const pipeline = await createPipeline(t, owner, projectId);
        const queued = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
          .build;
        const answer = await waiting;
        expect([change, answer.status, answer.body?.code]).toEqual([change, 401, "invalid_token"]);
        expect((await t.call("GET", `/v1/builds/${queued.id}`, { token: owner })).body.build.status).toBe("queued");
        expect((await t.call("POST", `/v1/builds/${queued.id}/cancel`, { token: owner })).status).toBe(200);
      }
    });
  });

  test("a runner that connects again with other labels and capabilities mid-job, through this daemon or another, still finishes its job, and a retried claim answers it", async () => {
    await besideAnotherDaemon(async (other) => {
      for (const through of [fixture.t, other]) {
        const run = await claimedJob();
        const connected = await run.on(through)("/connect", { labels: ["gpu"], capabilities: { os: "linux", arch: "arm64" }, version: "test-2" });
        expect(connected.status).toBe(200);
        const again = await run.call("/jobs/claim", { claim_id: run.claimId, wait_seconds: 0 });
        expect(again.status).toBe(201);
        expect(again.body.job.job_id).toBe(run.job.job_id);
        const finished = await run.call(`/jobs/${run.job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 });
        expect(finished.status).toBe(200);
        expect(finished.body.build).toMatchObject({ id: run.build.id, status: "succeeded" });
      }
    });
  });
});

describe("a job's status changes", () => {
  /** The fixture's database file, on a connection of this test's own (an EXPLAIN on the daemon's reader would hold its snapshot). */
  function ownConnection(): Database {
    return new Database(fixture.t.config.databaseUrl.replace(/^file:/, ""), { readonly: true });
  }

  test("write only the index entries their reads use: the retention indexes hold finished builds, jobs_lease running jobs", async () => {
    const { t, owner, projectId } = fixture;
    const pipeline = await createPipeline(t, owner, projectId, { concurrency: { max_concurrent: 2 } });
    for (let i = 0; i < 3; i++)
      await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    const made = await t.call("POST", "/v1/runners", { token: owner, body: { name: "index-entries" } });
    const call = (path: string, body: unknown) => t.call("POST", `/v1/runners/${made.body.runner.id}${path}`, { token: made.body.token, body });
    await call("/connect", { capabilities: { os: "linux", arch: "x64" }, version: "test" });
    // One build finished, one running, one queued.
    const first = (await call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 })).body.job;
    expect((await call(`/jobs/${first.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 })).status).toBe(200);
    expect((await call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 })).status).toBe(201);

    const db = ownConnection();
    try {
      const count = (sql: string) => (db.query(sql).get() as { n: number }).n;
      // An index b-tree holds an entry in every cell, of its interior pages too (https://www.sqlite.org/fileformat2.html#b_tree_pages).
      const entries = (index: string) => count(`SELECT SUM(ncell) AS n FROM dbstat WHERE name = '${index}'`);
      expect(count("SELECT COUNT(*) AS n FROM builds WHERE status IN ('queued', 'running') AND logs_deleted_at IS NULL")).toBeGreaterThanOrEqual(2);
      expect(entries("builds_logs_kept")).toBe(count("SELECT COUNT(*) AS n FROM builds WHERE logs_deleted_at IS NULL AND status NOT IN ('queued', 'running')"));
      expect(entries("builds_artifacts_kept")).toBe(
        count("SELECT COUNT(*) AS n FROM builds WHERE artifacts_deleted_at IS NULL AND status NOT IN ('queued', 'running')"),
      );
      expect(count("SELECT COUNT(*) AS n FROM jobs WHERE status = 'finished'")).toBeGreaterThanOrEqual(1);
      expect(entries("jobs_lease")).toBe(count("SELECT COUNT(*) AS n FROM jobs WHERE status = 'running'"));
    } finally {
      db.close();
    }
  });

  test("build no temporary b-tree of constants: the UPDATE of a start and of a finish, its triggers included", async () => {
    const { job, call } = await claimedJobRecorded();
    const finish = await statementsOf(() => call(`/jobs/${job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 }));
    expect(finish.result.status).toBe(200);
    const updates = withArgs.filter(({ sql }) => /^\s*UPDATE builds SET\s+status = \?/.test(sql));
    // The claim's start and the finish's.
    expect(updates).toHaveLength(2);
    const db = ownConnection();
    try {
      for (const { sql, args } of updates) {
        const program = db.query(`EXPLAIN ${sql}`).all(...(args as never[])) as { opcode: string; p4: unknown }[];
        // An IN list of three or more constants is built into an ephemeral b-tree, constant by
        // constant (String8), each time the statement runs; a list of two is compared in place.
        const built = program.flatMap((op, i) => (op.opcode === "OpenEphemeral" && program[i + 1]?.opcode === "String8" ? [i] : []));
        expect(built).toEqual([]);
      }
    } finally {
      db.close();
    }
  });

  /** A job claimed by a new runner, the statements recorded from the claim on. */
  async function claimedJobRecorded() {
    const { t, owner, projectId } = fixture;
    const pipeline = await createPipeline(t, owner, projectId);
    await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    const made = await t.call("POST", "/v1/runners", { token: owner, body: { name: `e-${crypto.randomUUID().slice(0, 6)}` } });
    const call = (path: string, body: unknown) => t.call("POST", `/v1/runners/${made.body.runner.id}${path}`, { token: made.body.token, body });
    await call("/connect", { capabilities: { os: "linux", arch: "x64" }, version: "test" });
    withArgs.length = 0;
    const job = (await call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 })).body.job;
    return { job, call };
  }
});
