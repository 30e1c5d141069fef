// How commit statuses leave (docs/webhooks.md "Commit statuses"): only the latest state of a commit
// and pipeline, as soon as a build changes, several at once per host but never more than
// PER_FORGE_IN_FLIGHT, each once even with two reporters, and not before the host's rate limit
// (Retry-After, x-ratelimit-*) says so. Counted on the GitHub stand-in's requests.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { SHA_A, SHA_B, createPipeline, startCiFixture, type CiFixture } from "../../helpers/ci.ts";
import { PER_FORGE_IN_FLIGHT, reportCommitStatuses, startCommitStatusReporter } from "../../../lib/forges/commit-statuses.ts";
import { transitionBuild } from "../../../lib/builds/transition.ts";
import { createBuild } from "../../../lib/builds/create.ts";
import { all, inTransaction } from "../../../lib/db/client.ts";
import { pollUntil } from "../../helpers/poll.ts";

let f: CiFixture;
const BASE = "https://ci.example.test";
const report = (claimer?: string) =>
  reportCommitStatuses({
    db: f.t.db,
    secrets: f.t.ctx.secrets,
    config: f.t.ctx.config,
    clock: f.t.clock,
    log: f.t.ctx.log,
    now: f.t.clock.now(),
    baseUrl: BASE,
    ...(claimer ? { claimer } : {}),
  });
const posted = () => f.host.requests.filter((r) => r.method === "POST" && r.path.includes("/statuses/"));

beforeAll(async () => {
  // The stand-in's installation tokens expire an hour from the real now: so does the app's clock, so the token is kept.
  f = await startCiFixture({}, { clockStart: Math.floor(Date.now() / 1000) });
});
afterAll(() => f.stop());
beforeEach(async () => {
  while ((await report()) > 0);
  f.host.statuses.delayMs = 0;
  f.host.statuses.maxInFlight = 0;
});

async function newBuild(pipelineId: string, sha = SHA_A) {
  return (await createBuild(f.t.ctx, { pipelineId, branch: "main", commitSha: sha, triggerType: "manual" })).build;
}

describe("only the latest state", () => {
  test("a build queued, started and finished before the reporter came by is sent once, as finished", async () => {
    const pipeline = await createPipeline(f.t, f.owner, f.projectId, { name: "coalesced" });
    const build = await newBuild(pipeline.id);
    await transitionBuild(f.t.ctx, build.id, "start", { runner_id: "r" });
    await transitionBuild(f.t.ctx, build.id, "succeed", { exit_code: 0 });
    const before = posted().length;
    expect(await report()).toBe(1);
    expect(
      posted()
        .slice(before)
        .map((r) => r.body),
    ).toEqual([
      { state: "success", target_url: `${BASE}/v1/builds/${build.id}`, description: `Build #${build.build_number} succeeded`, context: "roost/coalesced" },
    ]);
    expect(await report()).toBe(0);
  });

  test("of several builds of one commit and pipeline, only the newest's state is sent; an older one finishing later sends nothing", async () => {
    const pipeline = await createPipeline(f.t, f.owner, f.projectId, { name: "newest", concurrency: { max_concurrent: 5 } });
    const older = await newBuild(pipeline.id, SHA_B);
    await transitionBuild(f.t.ctx, older.id, "start", { runner_id: "r" });
    const newer = await newBuild(pipeline.id, SHA_B);
    const before = posted().length;
    expect(await report()).toBe(1);
    await transitionBuild(f.t.ctx, older.id, "fail", { exit_code: 1 });
    expect(await report()).toBe(0);
    expect(
      posted()
        .slice(before)
        .map((r) => (r.body as { description: string }).description),
    ).toEqual([`Build #${newer.build_number} is queued`]);
  });
});

test("a running reporter sends a build's change at once, without waiting for its timed pass", async () => {
  // Its timed pass once a minute here, after the deadlines below: only the build's own change can
  // send the status in time. (A bound of 1 s against the 2 s pass failed on a host stalled that long.)
  const stop = startCommitStatusReporter(f.t.ctx, BASE, 60_000);
  try {
    const pipeline = await createPipeline(f.t, f.owner, f.projectId, { name: "live" });
    const before = posted().length;
    const build = (await f.t.call("POST", `/v1/projects/${f.projectId}/builds`, { token: f.owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
      .build;
    await pollUntil("the queued build's status", posted, (p) => p.length > before, 10_000, 5);
    await f.t.call("POST", `/v1/builds/${build.id}/cancel`, { token: f.owner });
    await pollUntil("the canceled build's status", posted, (p) => p.length >= before + 2, 10_000, 5);
    expect(
      posted()
        .slice(before)
        .map((r) => (r.body as { state: string }).state),
    ).toEqual(["pending", "error"]);
  } finally {
    await stop();
  }
});

test(`several statuses to one host are sent at once, at most ${PER_FORGE_IN_FLIGHT} at a time`, async () => {
  const pipeline = await createPipeline(f.t, f.owner, f.projectId, { name: "many", concurrency: { max_concurrent: 100 } });
  const n = PER_FORGE_IN_FLIGHT + 8;
  for (let i = 0; i < n; i++) await newBuild(pipeline.id, i.toString(16).padStart(40, "c"));
  // Each answer takes 200 ms: one after another, 40 would take 8 s; 32 at a time, 0.4 s. Under half
  // of the first leaves room for a machine busy with other work (at 40 ms each and a bound of
  // 0.9 s it failed at load 23).
  f.host.statuses.delayMs = 200;
  const started = performance.now();
  expect(await report()).toBe(n);
  expect(f.host.statuses.maxInFlight).toBe(PER_FORGE_IN_FLIGHT);
  expect(performance.now() - started).toBeLessThan(4000);
});

test("statuses keep leaving while the database's writer is held by other work (a webhook burst), recorded after it", async () => {
  const pipeline = await createPipeline(f.t, f.owner, f.projectId, { name: "held", concurrency: { max_concurrent: 100 } });
  const n = PER_FORGE_IN_FLIGHT + 8;
  for (let i = 0; i < n; i++) await newBuild(pipeline.id, i.toString(16).padStart(40, "e"));
  const before = posted().length;
  f.host.statuses.delayMs = 100;
  const reporting = report();
  // Once the first status reaches the host the rows are claimed: then a write transaction holds the
  // writer until every status has left, or 5 s. A sender that waited for the writer between two
  // requests would stop at its first round.
  while (posted().length === before) await Bun.sleep(5);
  const leftWhileHeld = await inTransaction(f.t.db, async () => {
    const until = performance.now() + 5000;
    while (posted().length - before < n && performance.now() < until) await Bun.sleep(10);
    return posted().length - before;
  });
  expect(leftWhileHeld).toBe(n);
  expect(await reporting).toBe(n);
  // Recorded: nothing of it is due again.
  expect(await report()).toBe(0);
  expect(posted().length - before).toBe(n);
});

test("two reporters at once (two daemon processes) send each status once", async () => {
  const pipeline = await createPipeline(f.t, f.owner, f.projectId, { name: "twice", concurrency: { max_concurrent: 50 } });
  for (let i = 0; i < 20; i++) await newBuild(pipeline.id, i.toString(16).padStart(40, "d"));
  const before = posted().length;
  const [a, b] = await Promise.all([report("process-a"), report("process-b")]);
  expect(a + b).toBe(20);
  const sent = posted()
    .slice(before)
    .map((r) => r.path);
  expect(new Set(sent).size).toBe(20);
  expect(sent).toHaveLength(20);
});

describe("the host's rate limit", () => {
  test("Retry-After: nothing more goes to that host until then, no attempt is counted, and the latest state goes after", async () => {
    const pipeline = await createPipeline(f.t, f.owner, f.projectId, { name: "limited" });
    const build = await newBuild(pipeline.id, "e".repeat(40));
    f.host.failNext(1, 403, { "retry-after": "30" });
    const before = f.host.requests.length;
    expect(await report()).toBe(0);
    await transitionBuild(f.t.ctx, build.id, "start", { runner_id: "r" });
    f.t.clock.advance(29);
    expect(await report()).toBe(0);
    expect(f.host.requests.length - before).toBe(1); // the refused one only
    expect((await all(f.t.db, "SELECT attempts FROM commit_status_outbox WHERE build_id = ?", [build.id]))[0]!.attempts).toBe(0);
    f.t.clock.advance(1);
    expect(await report()).toBe(1);
    expect(f.host.requests.slice(before).map((r) => (r.body as { state: string } | undefined)?.state)).toEqual(["pending", "pending"]);
    expect((f.host.requests.at(-1)!.body as { description: string }).description).toBe(`Build #${build.build_number} is running`);
  });

  test("x-ratelimit-remaining 0: the host is not asked again before x-ratelimit-reset", async () => {
    const pipeline = await createPipeline(f.t, f.owner, f.projectId, { name: "reset" });
    await newBuild(pipeline.id, "f".repeat(40));
    f.host.failNext(1, 403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(f.t.clock.now() + 120) });
    const before = f.host.requests.length;
    expect(await report()).toBe(0);
    f.t.clock.advance(60);
    expect(await report()).toBe(0);
    expect(f.host.requests.length - before).toBe(1);
    f.t.clock.advance(60);
    expect(await report()).toBe(1);
    expect(await all(f.t.db, "SELECT 1 FROM commit_status_outbox WHERE version != sent_version")).toEqual([]);
  });
});
