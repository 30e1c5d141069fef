// Webhook pushes whose write batches wait together in the write queue are written by merged
// statements, one for their deliveries and one for their builds (lib/webhooks/merged-writes.ts):
// what each push answers and records must be what it would have alone. Their builds are numbered
// without a gap and named by their deliveries' decisions; a push whose key is held, or whose guard
// no longer holds, acts as it does alone while the others build.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { all } from "../../lib/db/client.ts";
import { createPipeline, signedAcmePush, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import { appHoldingBatches } from "../helpers/held-batches.ts";

let fixture: CiFixture;
let held: ReturnType<typeof appHoldingBatches>;
beforeAll(async () => {
  fixture = await startCiFixture();
  held = appHoldingBatches(fixture.t);
});
afterAll(() => fixture?.stop());

async function push(branch: string, sha: string, delivery: string = crypto.randomUUID()): Promise<{ status: number; body: any }> {
  const signed = await signedAcmePush(branch, sha, delivery, `commit ${sha.slice(0, 6)}`);
  const headers = { host: "127.0.0.1:8080", "content-type": "application/json", ...signed.headers };
  const res = await held.app.fetch(new Request("http://127.0.0.1:8080/v1/webhooks/github", { method: "POST", headers, body: signed.body }), "140.82.112.1");
  return { status: res.status, body: (await res.json()) as any };
}

const sha = (i: number) => i.toString(16).padStart(4, "0").repeat(10);

/** Pipelines building `prefix/**`, and a first push there (this daemon then keeps the project and pipelines as read). */
async function pipelines(prefix: string, n: number, body: Record<string, unknown> = {}) {
  const { t, owner, projectId } = fixture;
  const made = [];
  for (let i = 0; i < n; i++) made.push(await createPipeline(t, owner, projectId, { trigger_config: { branches: [`${prefix}/**`] }, ...body }));
  expect((await push(`${prefix}/warm`, sha(0))).status).toBe(200);
  return made;
}

/** The project's builds and deliveries as stored, for the checks every test makes. */
async function stored() {
  const { t, projectId } = fixture;
  const builds = await all(t.db, "SELECT id, build_number, queue_seq FROM builds WHERE project_id = ? ORDER BY build_number", [projectId]);
  const deliveries = await all(t.db, "SELECT id, result, decisions, duplicate_of FROM webhook_deliveries WHERE project_id = ? OR duplicate_of IS NOT NULL", [
    projectId,
  ]);
  return { builds, deliveries };
}

/** Gap-free numbers, distinct queue places, the counter past the last, and every decision naming its build's number (in its reason too). */
async function expectConsistent() {
  const { builds, deliveries } = await stored();
  expect(builds.map((b) => Number(b.build_number))).toEqual(builds.map((_, i) => i + 1));
  expect(new Set(builds.map((b) => Number(b.queue_seq))).size).toBe(builds.length);
  const counter = await all(fixture.t.db, "SELECT next_build_number FROM projects WHERE id = ?", [fixture.projectId]);
  expect(Number(counter[0]!.next_build_number)).toBe(builds.length + 1);
  const numberOf = new Map(builds.map((b) => [String(b.id), Number(b.build_number)]));
  const decided = deliveries.flatMap((d) => (JSON.parse(String(d.decisions)) as any[]).filter((x) => x.build));
  expect(decided).toHaveLength(builds.length);
  for (const d of decided) {
    expect(d.build_number).toBe(numberOf.get(d.build_id)!);
    expect(d.reason).toEndWith(`: build #${d.build_number}`);
  }
}

describe("pushes whose write batches wait together", () => {
  test("each builds, numbered and queued as it would have been alone, numbers and queue places in one order", async () => {
    await pipelines("together", 2);
    held.holdNext(6);
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => push(`together/b${i}`, sha(i + 1))));
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    for (const a of answers) {
      expect(a.body.duplicate).toBe(false);
      expect(a.body.builds).toHaveLength(2);
    }
    // Each push's two builds numbered one after the other, and the queue places in the numbers' order.
    for (const a of answers) expect(Math.abs(a.body.builds[0].build_number - a.body.builds[1].build_number)).toBe(1);
    const { builds } = await stored();
    const places = builds.map((b) => Number(b.queue_seq));
    expect(places).toEqual([...places].sort((x, y) => x - y));
    await expectConsistent();
  });

  test("one of them a redelivery of a push already accepted: it is that push's duplicate, and the others build", async () => {
    await pipelines("again", 1);
    const delivery = crypto.randomUUID();
    const first = await push("again/x", sha(100), delivery);
    held.holdNext(4);
    const answers = await Promise.all([push("again/a", sha(101)), push("again/x", sha(100), delivery), push("again/b", sha(102)), push("again/c", sha(103))]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(answers.map((a) => a.body.duplicate)).toEqual([false, true, false, false]);
    expect(answers.map((a) => a.body.builds.length)).toEqual([1, 0, 1, 1]);
    const duplicates = await all(fixture.t.db, "SELECT duplicate_of FROM webhook_deliveries WHERE id = ?", [answers[1]!.body.delivery_id]);
    expect(duplicates).toEqual([{ duplicate_of: first.body.delivery_id }]);
    await expectConsistent();
  });

  test("the same delivery twice among them: one builds, the other is its duplicate", async () => {
    await pipelines("twice", 1);
    const delivery = crypto.randomUUID();
    held.holdNext(3);
    const answers = await Promise.all([push("twice/a", sha(200), delivery), push("twice/b", sha(201)), push("twice/a", sha(200), delivery)]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(answers.map((a) => a.body.duplicate).sort()).toEqual([false, false, true]);
    expect(answers.map((a) => a.body.builds.length).reduce((x, y) => x + y)).toBe(2);
    await expectConsistent();
  });

  test("a pipeline disabled after their reads and before their write: each is decided again and builds nothing with it", async () => {
    const { t, owner } = fixture;
    const [gone, kept] = await pipelines("moved", 2);
    // Disabled through the fixture's app: the held app's daemon still has the pipelines as it read them.
    expect((await t.call("PATCH", `/v1/pipelines/${gone.id}`, { token: owner, body: { enabled: false } })).status).toBe(200);
    held.holdNext(3);
    const answers = await Promise.all([push("moved/a", sha(300)), push("moved/b", sha(301)), push("moved/c", sha(302))]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    for (const a of answers) expect(a.body.builds.map((b: any) => b.pipeline_id)).toEqual([kept.id]);
    await expectConsistent();
  });

  test("pushes to a pipeline that cancels older builds: written each as it is, and the older builds canceled", async () => {
    const { t, owner, projectId } = fixture;
    await pipelines("cancels", 1, { concurrency: { cancel_previous: true, max_concurrent: 5 } });
    held.holdNext(3);
    const answers = await Promise.all([push("cancels/main", sha(400)), push("cancels/main", sha(401)), push("cancels/other", sha(402))]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    const [a, b] = [answers[0]!.body.builds[0], answers[1]!.body.builds[0]];
    const older = a.build_number < b.build_number ? a : b;
    const build = (await t.call("GET", `/v1/builds/${older.id}`, { token: owner })).body.build;
    expect(build.status).toBe("canceled");
    expect(build.project_id).toBe(projectId);
    await expectConsistent();
  });
});
