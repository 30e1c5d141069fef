// A runner's claim and finish in as few statements as their work allows (issue 20: the daemon's CPU
// per job; docs/benchmarks.md "The runner fleet's CPU per job"). Each statement a request hands
// the database costs its own run, and a read outside a transaction its own look at the WAL; the
// counts are of the statements the app hands its database, a batch's one by one.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SHA_A, createPipeline, startCiFixture, type CiFixture } from "../helpers/ci.ts";

let fixture: CiFixture;
const statements: string[] = [];
/** The length of each write batch, in the order run. */
const batches: number[] = [];

beforeAll(async () => {
  fixture = await startCiFixture();
  const db = fixture.t.db;
  const { execute, batch } = db;
  const record = (stmt: { sql?: string } | string) => statements.push((typeof stmt === "string" ? stmt : (stmt.sql ?? "")).replace(/\s+/g, " ").trim());
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

async function statementsOf<T>(work: () => Promise<T>): Promise<{ result: T; run: string[]; batches: number[] }> {
  statements.length = 0;
  batches.length = 0;
  const result = await work();
  return { result, run: [...statements], batches: [...batches] };
}

describe("a job's claim and finish", () => {
  test("the claim reads the job's payload in its write batch, in three statements; the finish answers the build its transition returned", async () => {
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
    expect(again.batches).toEqual([]);

    const finish = await statementsOf(() => call(`/jobs/${job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 }));
    expect(finish.result.status).toBe(200);
    expect(finish.result.body.build).toMatchObject({ id: build.id, status: "succeeded", exit_code: 0 });
    expect(finish.result.body.build.finished_at).toBe(t.clock.now());
    // The runner (1), the job and its build (2), the guarded batch: what follows the transition
    // (the commit status and the notification), the transition RETURNING the build, the job (4).
    // (5 before: the build was read back after the transition had returned it.)
    expect(finish.run.filter((sql) => /^SELECT \* FROM builds WHERE id = \?$/.test(sql))).toEqual([]);
    expect(finish.run).toHaveLength(7);
    expect(finish.batches).toEqual([4]);
    const stored = (await t.call("GET", `/v1/builds/${build.id}`, { token: owner })).body.build;
    expect(finish.result.body.build).toEqual(stored);
  });

  test("a finish after its build was canceled reads the build back: it stays canceled", async () => {
    const { t, owner, projectId } = fixture;
    const pipeline = await createPipeline(t, owner, projectId);
    const build = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
      .build;
    const made = await t.call("POST", "/v1/runners", { token: owner, body: { name: "canceled" } });
    const call = (path: string, body: unknown) => t.call("POST", `/v1/runners/${made.body.runner.id}${path}`, { token: made.body.token, body });
    await call("/connect", { capabilities: { os: "linux", arch: "x64" }, version: "test" });
    const job = (await call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 })).body.job;
    expect(job.build.id).toBe(build.id);
    expect((await t.call("POST", `/v1/builds/${build.id}/cancel`, { token: owner })).status).toBe(200);
    const finish = await statementsOf(() => call(`/jobs/${job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 }));
    expect(finish.result.status).toBe(200);
    expect(finish.result.body.build).toMatchObject({ id: build.id, status: "canceled" });
    expect(finish.run.at(-1)).toBe("SELECT * FROM builds WHERE id = ?");
  });
});
