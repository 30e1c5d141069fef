// Round trips to a libSQL server per runner request (docs/benchmarks.md "Three daemons on one sqld
// under 100 runners"): on several hosts each request to sqld is a network round trip, and the ones
// made while holding its write lock are what three daemons queue for. The in-process app talks
// Hrana over HTTP to sqld through a stand-in that counts the requests (tests/support/sqld-request-counter.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { createPipeline, SHA_A, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import { startSqld, type Sqld } from "../support/sqld.ts";
import { startSqldRequestCounter, type SqldRequestCounter } from "../support/sqld-request-counter.ts";

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
      // The runner's token (1), the earlier claim and the routes (1), the claim (1), the job's
      // project, repository, variables and integration (at most 4: side by side where they can).
      expect(claimed.writes).toBe(1);
      expect(claimed.requests).toBeLessThanOrEqual(7);
      // The token (1), the job with its build's status (1), the job's and build's log positions (1),
      // the write (1). (5 before 2026-11-26's last change: the build's status was read after the write.)
      expect(appended).toEqual({ requests: 4, writes: 1 });
      // The token (1), the renewal with the jobs' state (1).
      expect(beaten).toEqual({ requests: 2, writes: 1 });
      let finish: any;
      const finished = await counter.count(
        async () =>
          (finish = await call(`/jobs/${jobId}/finish`, {
            status: "succeeded",
            exit_code: 0,
            line_count: 25,
            flutter_sdk: { requested: "3.24.5", version: "3.24.5", source: "path", revision: null },
          })),
      );
      expect(finish.body.build).toMatchObject({ status: "succeeded", flutter_sdk: { version: "3.24.5" } });
      // The token (1), the job (1); the write: the job, the build's environment with its
      // transition, what follows it (commit status, notification), COMMIT (4); the build (1).
      expect(finished).toEqual({ requests: 7, writes: 4 });
    }
  });
});
