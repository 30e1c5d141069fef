// Builds by status in GET /metrics and a listing's include=total come from counters kept in each
// build change's own transaction (schema.sql migrations 17 and 26), not from counting builds: they
// must agree with the builds themselves, for every filter of both listings, after creations, every
// transition, and deletes that cascade.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SHA_A, createPipeline, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import { all } from "../../lib/db/client.ts";
import { transitionBuild } from "../../lib/builds/transition.ts";
import { createBuild } from "../../lib/builds/create.ts";

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
/** Every include=total a listing can be asked for, against counting the builds themselves. */
async function totalsAgree(pipelineIds: string[]): Promise<void> {
  const { t, owner, projectId } = f;
  const scopes: [string, string, string][] = [
    [`/v1/projects/${projectId}/builds`, "project_id", projectId],
    ...pipelineIds.map((id): [string, string, string] => [`/v1/pipelines/${id}/builds`, "pipeline_id", id]),
  ];
  for (const [path, column, id] of scopes)
    for (const status of [undefined, "queued", "succeeded", "canceled"])
      for (const branch of [undefined, "main", "feature"])
        for (const trigger of [undefined, "manual", "schedule", "webhook"]) {
          const q = new URLSearchParams({
            include: "total",
            ...(status ? { status } : {}),
            ...(branch ? { branch } : {}),
            ...(trigger ? { trigger_type: trigger } : {}),
          });
          const where = [
            `${column} = ?`,
            ...(status ? ["status = ?"] : []),
            ...(branch ? ["branch = ?"] : []),
            ...(trigger ? ["(CASE WHEN trigger_event = 'schedule' THEN 'schedule' ELSE trigger_type END) = ?"] : []),
          ];
          const truth = await all(t.db, `SELECT COUNT(*) AS n FROM builds WHERE ${where.join(" AND ")}`, [
            id,
            ...[status, branch, trigger].filter((v): v is string => v !== undefined),
          ]);
          const res = await t.call("GET", `${path}?${q}`, { token: owner });
          if (res.body.total !== Number(truth[0]!.n)) throw new Error(`${path}?${q}: total ${res.body.total}, builds ${truth[0]!.n}`);
        }
}

async function metrics(): Promise<string> {
  return (await f.t.app.fetch(new Request("http://127.0.0.1:8080/metrics"), "127.0.0.1")).text();
}

test("the counters follow creations, transitions and cascading deletes, and /metrics reports them", async () => {
  const { t, owner, projectId } = f;
  const a = await createPipeline(t, owner, projectId);
  const b = await createPipeline(t, owner, projectId);
  const ids: string[] = [];
  for (const [p, branch] of [
    [a, "main"],
    [a, "feature"],
    [a, "main"],
    [b, "feature"],
    [b, "main"],
  ] as const)
    ids.push(
      (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: p.id, branch, commit_sha: SHA_A } })).body.build.id,
    );
  ids.push((await createBuild(t.ctx, { pipelineId: a.id, branch: "main", commitSha: SHA_A, triggerType: "schedule" })).build.id);
  ids.push((await createBuild(t.ctx, { pipelineId: b.id, branch: "feature", commitSha: SHA_A, triggerType: "webhook", triggerEvent: "push" })).build.id);
  expect(await counted()).toEqual({ queued: 7 });
  await totalsAgree([a.id, b.id]);
  await transitionBuild(t.ctx, ids[0]!, "start", { runner_id: "r" });
  await transitionBuild(t.ctx, ids[0]!, "succeed", { exit_code: 0 });
  await transitionBuild(t.ctx, ids[1]!, "start", { runner_id: "r" });
  await transitionBuild(t.ctx, ids[1]!, "release");
  await t.call("POST", `/v1/builds/${ids[3]}/cancel`, { token: owner });
  await transitionBuild(t.ctx, ids[4]!, "fail", { exit_code: 1 });
  expect(await counted()).toEqual(await truth());
  expect(await counted()).toEqual({ queued: 4, succeeded: 1, canceled: 1, failed: 1 });
  await totalsAgree([a.id, b.id]);
  const text = await metrics();
  expect(text).toContain('roost_builds{status="queued"} 4');
  expect(text).toContain('roost_builds{status="running"} 0');
  expect(text).toContain("roost_queue_depth 4");

  // Deleting a pipeline deletes its builds and their counts.
  expect((await t.call("DELETE", `/v1/pipelines/${b.id}`, { token: owner })).status).toBeLessThan(300);
  expect(await counted()).toEqual(await truth());
  expect(await counted()).toEqual({ queued: 3, succeeded: 1 });
  await totalsAgree([a.id]);

  // Deleting the project deletes the rest.
  expect((await t.call("DELETE", `/v1/projects/${projectId}`, { token: owner })).status).toBeLessThan(300);
  expect(await counted()).toEqual({});
  expect(await metrics()).toContain("roost_queue_depth 0");
});
