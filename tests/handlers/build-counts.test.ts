// Builds by status in GET /metrics and a listing's include=total come from counters kept in each
// build change's own transaction (schema.sql migration 17), not from counting builds: they must
// agree with the builds themselves after creations, every transition, and deletes that cascade.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SHA_A, createPipeline, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import { all } from "../../lib/db/client.ts";
import { transitionBuild } from "../../lib/builds/transition.ts";

let f: CiFixture;
beforeAll(async () => {
  f = await startCiFixture();
});
afterAll(() => f.stop());

async function counted(): Promise<Record<string, number>> {
  const rows = await all(f.t.db, "SELECT status, SUM(n) AS n FROM build_counts GROUP BY status HAVING SUM(n) != 0");
  return Object.fromEntries(rows.map((r) => [String(r.status), Number(r.n)]));
}
async function truth(): Promise<Record<string, number>> {
  const rows = await all(f.t.db, "SELECT status, COUNT(*) AS n FROM builds GROUP BY status");
  return Object.fromEntries(rows.map((r) => [String(r.status), Number(r.n)]));
}
async function metrics(): Promise<string> {
  return (await f.t.app.fetch(new Request("http://127.0.0.1:8080/metrics"), "127.0.0.1")).text();
}

test("the counters follow creations, transitions and cascading deletes, and /metrics reports them", async () => {
  const { t, owner, projectId } = f;
  const a = await createPipeline(t, owner, projectId);
  const b = await createPipeline(t, owner, projectId);
  const ids: string[] = [];
  for (const p of [a, a, a, b, b]) ids.push((await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: p.id, commit_sha: SHA_A } })).body.build.id);
  expect(await counted()).toEqual({ queued: 5 });
  await transitionBuild(t.ctx, ids[0]!, "start", { runner_id: "r" });
  await transitionBuild(t.ctx, ids[0]!, "succeed", { exit_code: 0 });
  await transitionBuild(t.ctx, ids[1]!, "start", { runner_id: "r" });
  await transitionBuild(t.ctx, ids[1]!, "release");
  await t.call("POST", `/v1/builds/${ids[3]}/cancel`, { token: owner });
  await transitionBuild(t.ctx, ids[4]!, "fail", { exit_code: 1 });
  expect(await counted()).toEqual(await truth());
  expect(await counted()).toEqual({ queued: 2, succeeded: 1, canceled: 1, failed: 1 });
  const text = await metrics();
  expect(text).toContain('roost_builds{status="queued"} 2');
  expect(text).toContain('roost_builds{status="running"} 0');
  expect(text).toContain("roost_queue_depth 2");
  expect((await t.call("GET", `/v1/pipelines/${a.id}/builds?include=total`, { token: owner })).body.total).toBe(3);
  expect((await t.call("GET", `/v1/projects/${projectId}/builds?status=queued&include=total`, { token: owner })).body.total).toBe(2);

  // Deleting a pipeline deletes its builds and their counts.
  expect((await t.call("DELETE", `/v1/pipelines/${b.id}`, { token: owner })).status).toBeLessThan(300);
  expect(await counted()).toEqual(await truth());
  expect(await counted()).toEqual({ queued: 2, succeeded: 1 });
  expect((await t.call("GET", `/v1/projects/${projectId}/builds?include=total`, { token: owner })).body.total).toBe(3);

  // Deleting the project deletes the rest.
  expect((await t.call("DELETE", `/v1/projects/${projectId}`, { token: owner })).status).toBeLessThan(300);
  expect(await counted()).toEqual({});
  expect(await metrics()).toContain("roost_queue_depth 0");
});
