// Build numbers, queue places and commit statuses are written by triggers of a build's INSERT
// (schema.sql migration 44), whichever path creates the build: a push's write batch, a build asked
// through the API, a rerun. Started all at once, with some pushes delivered twice, every project's
// numbers stay gap-free and unique, the counter ends past the last, every delivery's decisions name
// the numbers its builds got, and each commit and pipeline has one commit status, its newest build's.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { all } from "../../lib/db/client.ts";
import { createPipeline, signedAcmePush, startCiFixture, type CiFixture } from "../helpers/ci.ts";

let f: CiFixture;
beforeAll(async () => {
  f = await startCiFixture();
});
afterAll(() => f?.stop());

async function push(branch: string, sha: string, delivery: string) {
  const signed = await signedAcmePush(branch, sha, delivery, `commit ${sha.slice(0, 6)}`);
  const headers = { host: "127.0.0.1:8080", "content-type": "application/json", ...signed.headers };
  return f.t.call("POST", "/v1/webhooks/github", { raw: signed.body, contentType: "application/json", headers, peer: "140.82.112.1" });
}

test("pushes (some delivered twice), API builds and reruns at once: gap-free numbers, the decisions' numbers, one commit status per commit and pipeline", async () => {
  const { t, owner, projectId } = f;
  const pushed = await createPipeline(t, owner, projectId, { trigger_config: { branches: ["together/**"] } });
  const alsoPushed = await createPipeline(t, owner, projectId, { trigger_config: { branches: ["together/**"] } });
  const first = await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pushed.id, commit_sha: "e".repeat(40) } });
  expect(first.status).toBe(201);

  const calls: Promise<{ status: number; body: any }>[] = [];
  for (let i = 1; i <= 24; i++) {
    const sha = i.toString(16).padStart(2, "0").repeat(20);
    const delivery = crypto.randomUUID();
    calls.push(push(`together/b${i}`, sha, delivery));
    if (i % 3 === 0) calls.push(push(`together/b${i}`, sha, delivery));
    calls.push(t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: alsoPushed.id, commit_sha: sha } }));
    if (i % 4 === 0) calls.push(t.call("POST", `/v1/builds/${first.body.build.id}/rerun`, { token: owner, body: {} }));
  }
  const answers = await Promise.all(calls);
  expect(answers.filter((a) => a.status >= 300).map((a) => a.body)).toEqual([]);
  // Each push delivered twice: one of the two builds, the other is its duplicate.
  expect(answers.filter((a) => a.body.duplicate === true)).toHaveLength(8);

  const builds = await all(t.db, "SELECT id, build_number, pipeline_id, commit_sha, queue_seq FROM builds WHERE project_id = ? ORDER BY build_number", [
    projectId,
  ]);
  // 1 first + 24 pushes × 2 pipelines + 24 API builds + 6 reruns.
  expect(builds.map((b) => Number(b.build_number))).toEqual(Array.from({ length: 79 }, (_, i) => i + 1));
  const counter = await all(t.db, "SELECT next_build_number FROM projects WHERE id = ?", [projectId]);
  expect(Number(counter[0]!.next_build_number)).toBe(80);
  const places = builds.map((b) => Number(b.queue_seq));
  expect(new Set(places).size).toBe(places.length);

  const numberOf = new Map(builds.map((b) => [String(b.id), Number(b.build_number)]));
  const deliveries = await all(t.db, "SELECT result, decisions FROM webhook_deliveries WHERE project_id = ?", [projectId]);
  const decided = deliveries.flatMap((d) =>
    (JSON.parse(String(d.decisions)) as { build: boolean; build_id: string; build_number: number }[]).filter((x) => x.build),
  );
  expect(decided).toHaveLength(48);
  for (const d of decided) expect(d.build_number).toBe(numberOf.get(d.build_id)!);

  const newest = new Map<string, number>();
  for (const b of builds) {
    const key = `${b.commit_sha} ${b.pipeline_id}`;
    newest.set(key, Math.max(newest.get(key) ?? 0, Number(b.build_number)));
  }
  const statuses = await all(t.db, "SELECT commit_sha, pipeline_id, build_number FROM commit_status_outbox");
  expect(new Map(statuses.map((s) => [`${s.commit_sha} ${s.pipeline_id}`, Number(s.build_number)]))).toEqual(newest);
  expect(statuses).toHaveLength(newest.size);
}, 60_000);
