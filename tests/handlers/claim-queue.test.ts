// The runner claim (docs/runners.md "Routing", docs/api.md "max_concurrent"): the oldest build a
// runner may take, by queue order rather than by the second it was queued in, skipping full
// pipelines and other runners' builds without reading the queue behind them (schema.sql
// migration 21), asserted through the claim endpoint and on SQLite's query plan.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { SHA_A, createPipeline, createProject, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import { all, type Executor } from "../../lib/db/client.ts";
import type { Args, Statement } from "../../lib/db/database.ts";
import { nextClaimableBuild } from "../../lib/runners/jobs.ts";
import { findRunner } from "../../lib/runners/store.ts";
import { createBuild } from "../../lib/builds/create.ts";
import { transitionBuild } from "../../lib/builds/transition.ts";
import { snapshotOf, findPipeline } from "../../lib/pipelines/store.ts";

let f: CiFixture;
beforeAll(async () => {
  f = await startCiFixture();
});
afterAll(() => f.stop());

async function runner(labels: string[] = [], os: "linux" | "macos" = "linux") {
  const { t, owner } = f;
  const created = await t.call("POST", "/v1/runners", { token: owner, body: { name: `r-${crypto.randomUUID().slice(0, 6)}`, labels } });
  const { id } = created.body.runner;
  const token: string = created.body.token;
  await t.call("POST", `/v1/runners/${id}/connect`, {
    token,
    body: { capabilities: { os, arch: "x64", flutter_versions: [], xcode: os === "macos" ? "16.0" : null }, version: "test" },
  });
  return {
    id,
    /** The build number the claim handed out, or null (204). */
    async claim(): Promise<{ id: string; build_number: number; project_id: string } | null> {
      const res = await t.call("POST", `/v1/runners/${id}/jobs/claim`, { token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } });
      if (res.status === 204) return null;
      expect(res.status).toBe(201);
      return res.body.job.build;
    },
    async release(jobBuildId: string) {
      const job = (await all(t.db, "SELECT id FROM jobs WHERE build_id = ? AND status = 'running'", [jobBuildId]))[0]!;
      expect((await t.call("POST", `/v1/runners/${id}/jobs/${job.id}/release`, { token, body: {} })).status).toBeLessThan(300);
    },
  };
}

async function build(pipelineId: string, projectId: string) {
  return (await f.t.call("POST", `/v1/projects/${projectId}/builds`, { token: f.owner, body: { pipeline_id: pipelineId, commit_sha: SHA_A } })).body.build as {
    id: string;
    build_number: number;
  };
}

beforeEach(async () => {
  // Each test claims only its own builds.
  await f.t.db.execute("UPDATE builds SET status = 'canceled' WHERE status IN ('queued', 'running')");
});

describe("the claim", () => {
  test("hands builds out in the order they were queued, also within one second and across projects", async () => {
    const other = await createProject(f.t, f.owner, "acme/website");
    const a = await createPipeline(f.t, f.owner, f.projectId, { concurrency: { max_concurrent: 10 } });
    const b = await createPipeline(f.t, f.owner, other.id, { concurrency: { max_concurrent: 10 } });
    // The test clock stands still: every build is queued in the same second.
    const order = [
      await build(a.id, f.projectId),
      await build(a.id, f.projectId),
      await build(a.id, f.projectId),
      await build(b.id, other.id),
      await build(a.id, f.projectId),
    ];
    const r = await runner();
    const claimed = [];
    for (let i = 0; i < order.length; i++) claimed.push((await r.claim())!.id);
    expect(claimed).toEqual(order.map((x) => x.id));
    expect(await r.claim()).toBeNull();
  });

  test("max_concurrent keeps extra builds queued, never dropped, while other pipelines' builds go past them", async () => {
    const full = await createPipeline(f.t, f.owner, f.projectId, { concurrency: { max_concurrent: 2 } });
    const free = await createPipeline(f.t, f.owner, f.projectId);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await build(full.id, f.projectId)).id);
    const behind = await build(free.id, f.projectId);
    const r = await runner();
    expect((await r.claim())!.id).toBe(ids[0]!);
    expect((await r.claim())!.id).toBe(ids[1]!);
    expect((await r.claim())!.id).toBe(behind.id);
    expect(await r.claim()).toBeNull();
    await transitionBuild(f.t.ctx, ids[0]!, "succeed", { exit_code: 0 });
    expect((await r.claim())!.id).toBe(ids[2]!);
    expect(await r.claim()).toBeNull();
    // Raising the pipeline's limit frees slots for the builds already waiting.
    await f.t.call("PATCH", `/v1/pipelines/${full.id}`, { token: f.owner, body: { concurrency: { max_concurrent: 4 } } });
    expect((await r.claim())!.id).toBe(ids[3]!);
    expect((await r.claim())!.id).toBe(ids[4]!);
  });

  test("a pipeline for a large fleet: 200 of its builds run at once on 20 runners, the 201st waits for a slot", async () => {
    const pipeline = await createPipeline(f.t, f.owner, f.projectId, { concurrency: { max_concurrent: 200 } });
    const ids: string[] = [];
    for (let i = 0; i < 201; i++) ids.push((await build(pipeline.id, f.projectId)).id);
    const runners = await Promise.all(Array.from({ length: 20 }, () => runner()));
    // Twenty runners claiming side by side, ten rounds each: every claim gets a build, none twice.
    const rounds = async (r: Awaited<ReturnType<typeof runner>>) => {
      const got: string[] = [];
      for (let i = 0; i < 10; i++) got.push((await r.claim())!.id);
      return got;
    };
    const claimed = (await Promise.all(runners.map(rounds))).flat();
    expect(claimed).toHaveLength(200);
    expect(new Set(claimed)).toEqual(new Set(ids.slice(0, 200)));
    expect(await runners[0]!.claim()).toBeNull();
    await transitionBuild(f.t.ctx, ids[7]!, "succeed", { exit_code: 0 });
    expect((await runners[1]!.claim())!.id).toBe(ids[200]!);
  }, 60_000);

  test("max_concurrent goes up to 1000; above is refused with the field named", async () => {
    const pipeline = await createPipeline(f.t, f.owner, f.projectId, { concurrency: { max_concurrent: 1000 } });
    expect(pipeline.concurrency.max_concurrent).toBe(1000);
    const over = await f.t.call("PATCH", `/v1/pipelines/${pipeline.id}`, { token: f.owner, body: { concurrency: { max_concurrent: 1001 } } });
    expect(over.status).toBe(400);
    expect(over.body.code).toBe("invalid_request");
    expect(over.body.details).toEqual([{ path: "body.concurrency.max_concurrent", message: "must be at most 1000" }]);
  });

  test("a runner without a build's labels or platform takes the next build it can; the right runner takes the skipped one", async () => {
    const gpu = await createPipeline(f.t, f.owner, f.projectId, { execution_config: { runner_labels: ["gpu"] } });
    const ios = await createPipeline(f.t, f.owner, f.projectId, { execution_config: { platforms: ["ios"] } });
    const plain = await createPipeline(f.t, f.owner, f.projectId);
    const needsGpu = await build(gpu.id, f.projectId);
    const needsMac = await build(ios.id, f.projectId);
    const any = await build(plain.id, f.projectId);
    const linux = await runner();
    expect((await linux.claim())!.id).toBe(any.id);
    expect(await linux.claim()).toBeNull();
    expect((await (await runner([], "macos")).claim())!.id).toBe(needsMac.id);
    expect((await (await runner(["gpu"])).claim())!.id).toBe(needsGpu.id);
  });

  test("a released build keeps its place at the head of the queue", async () => {
    const pipeline = await createPipeline(f.t, f.owner, f.projectId, { concurrency: { max_concurrent: 5 } });
    const first = await build(pipeline.id, f.projectId);
    const second = await build(pipeline.id, f.projectId);
    const r = await runner();
    expect((await r.claim())!.id).toBe(first.id);
    await r.release(first.id);
    expect((await r.claim())!.id).toBe(first.id);
    expect((await r.claim())!.id).toBe(second.id);
  });

  test("a build defined by the pipeline file keeps the file's max_concurrent, whatever the pipeline's", async () => {
    const pipeline = await createPipeline(f.t, f.owner, f.projectId); // max_concurrent 1
    const snapshot = snapshotOf((await findPipeline(f.t.db, pipeline.id))!);
    const fromFile = { ...snapshot, concurrency: { ...snapshot.concurrency, max_concurrent: 3 } };
    const made = [];
    for (let i = 0; i < 4; i++)
      made.push(
        (
          await createBuild(f.t.ctx, {
            pipelineId: pipeline.id,
            branch: "main",
            commitSha: SHA_A,
            triggerType: "manual",
            configSnapshot: fromFile,
            definitionSource: { source: "file", path: "roost.yaml", commit_sha: SHA_A },
          })
        ).build.id,
      );
    const r = await runner();
    expect([(await r.claim())!.id, (await r.claim())!.id, (await r.claim())!.id]).toEqual(made.slice(0, 3));
    expect(await r.claim()).toBeNull();
  });

  test("the queue's groups always match the queued builds", async () => {
    const rows = await all(f.t.db, "SELECT pipeline_id, runner_route, own_max_concurrent, queued FROM build_queue_groups ORDER BY 1, 2, 3");
    const truth = await all(
      f.t.db,
      "SELECT pipeline_id, runner_route, own_max_concurrent, COUNT(*) AS queued FROM builds WHERE status = 'queued' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
    );
    expect(rows).toEqual(truth);
  });
});

describe("its cost", () => {
  test("the next build is found through the queue index and counters, never by reading the builds table", async () => {
    const seen: { sql: string; args: Args }[] = [];
    const recorder: Executor = {
      execute(stmt: Statement, args?: Args) {
        seen.push(typeof stmt === "string" ? { sql: stmt, args: args ?? [] } : { sql: stmt.sql, args: stmt.args ?? [] });
        return f.t.db.execute(stmt, args);
      },
    };
    const pipeline = await createPipeline(f.t, f.owner, f.projectId);
    await build(pipeline.id, f.projectId);
    const r = (await findRunner(f.t.db, (await runner()).id))!;
    expect(await nextClaimableBuild(recorder, r)).not.toBeNull();
    expect(seen).toHaveLength(2);
    const plans = [];
    for (const { sql, args } of seen) plans.push((await all(f.t.db, `EXPLAIN QUERY PLAN ${sql}`, args)).map((row) => String(row.detail)));
    // Only the groups are scanned (one row per pipeline, route and limit with queued builds; their
    // sort is over those rows); a group's head is one search of builds_queue, and the running
    // builds and the pipeline's limit are one primary-key read each.
    for (const line of plans.flat()) if (line.startsWith("SCAN ")) expect(line).toMatch(/^SCAN (build_queue_groups|g|json_each VIRTUAL TABLE INDEX \d+:)$/);
    expect(plans[1]).toContain("SEARCH q USING COVERING INDEX builds_queue (pipeline_id=? AND runner_route=? AND own_max_concurrent=?)");
    expect(plans[1]).toContain("SEARCH b USING INTEGER PRIMARY KEY (rowid=?)");
    expect(plans[1]).toContain("SEARCH c USING PRIMARY KEY (pipeline_id=? AND status=?)");
  });
});
