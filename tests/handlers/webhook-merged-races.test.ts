// Webhook pushes written by merged statements (lib/webhooks/merged-writes.ts) while other writers
// move what those statements read: a build created through the API in the same commit, a second
// daemon on the same database accepting a redelivery of one of them (same X-GitHub-Delivery, or
// the same body under another id) and creating builds, a change to another project's pipelines,
// a catalogue change after the pushes were verified, both daemons merging at once. No push builds
// twice, every build number is handed out once and without a gap, and the queue takes the builds
// in the order they were written.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { all, type Db } from "../../lib/db/client.ts";
import type { createApp } from "../../lib/http/app.ts";
import { openSecondApp } from "../helpers/sockets.ts";
import { createGitlabIntegration, createPipeline, createProject, SHA_A, signedAcmePush, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import { appHoldingBatches } from "../helpers/held-batches.ts";

let fixture: CiFixture;
let held: ReturnType<typeof appHoldingBatches>;
/** A second daemon on the fixture's database (its file, or its libSQL server): its own connection and write queue. */
let second: { app: ReturnType<typeof createApp>; db: Db };
/** The second daemon, its write batches held as the first's are. */
let secondHeld: ReturnType<typeof appHoldingBatches>;
beforeAll(async () => {
  fixture = await startCiFixture();
  held = appHoldingBatches(fixture.t);
  const { db, ctx, app } = await openSecondApp(fixture.t);
  second = { db, app };
  secondHeld = appHoldingBatches({ ...fixture.t, db, ctx });
});
afterAll(async () => {
  second?.db.close();
  await fixture?.stop();
});

const REPOSITORIES = { "acme/app": 1001, "acme/website": 1002 } as const;
type Repository = keyof typeof REPOSITORIES;

/** A GitHub push of one commit to `branch` of `repository`, signed with the integration's secret. */
const signedPush = (repository: Repository, branch: string, sha: string, delivery: string) =>
  signedAcmePush(branch, sha, delivery, `commit ${sha.slice(0, 6)}`, { id: REPOSITORIES[repository], full_name: repository });

type App = { fetch: ReturnType<typeof createApp>["fetch"] };

async function push(
  app: App,
  branch: string,
  sha: string,
  options: { delivery?: string; repository?: Repository } = {},
): Promise<{ status: number; body: any }> {
  const signed = await signedPush(options.repository ?? "acme/app", branch, sha, options.delivery ?? crypto.randomUUID());
  const headers = { host: "127.0.0.1:8080", "content-type": "application/json", ...signed.headers };
  const res = await app.fetch(new Request("http://127.0.0.1:8080/v1/webhooks/github", { method: "POST", headers, body: signed.body }), "140.82.112.1");
  return { status: res.status, body: (await res.json()) as any };
}

async function apiBuild(app: App, projectId: string, pipelineId: string, sha: string): Promise<{ status: number; body: any }> {
  const headers = { host: "127.0.0.1:8080", "content-type": "application/json", authorization: `Bearer ${fixture.owner}` };
  const body = JSON.stringify({ pipeline_id: pipelineId, branch: "main", commit_sha: sha });
  const res = await app.fetch(new Request(`http://127.0.0.1:8080/v1/projects/${projectId}/builds`, { method: "POST", headers, body }), "127.0.0.1");
  return { status: res.status, body: (await res.json()) as any };
}

const sha = (i: number) => i.toString(16).padStart(4, "0").repeat(10);

/** Until `n` writes of the held app wait (each request reads before it writes). */
async function waiting(n: number): Promise<void> {
  for (let i = 0; i < 500 && held.waiting() < n; i++) await Bun.sleep(10);
  expect(held.waiting()).toBe(n);
}

/** A pipeline of `projectId` building `prefix/**`, and a first push there: the held daemon then keeps the project and pipelines as read. */
async function pipeline(projectId: string, prefix: string, repository: Repository = "acme/app") {
  const made = await createPipeline(fixture.t, fixture.owner, projectId, { trigger_config: { branches: [`${prefix}/**`] } });
  expect((await push(held.app, `${prefix}/warm`, sha(0), { repository })).status).toBe(200);
  return made;
}

/**
 * The project's builds: numbered 1.. without a gap, the counter past the last, the queue in the
 * numbers' order (one project, each build written after the one before it), and every build a
 * delivery's decision names numbered as it says.
 */
async function expectConsistent(projectId: string) {
  const db = fixture.t.db;
  const builds = await all(db, "SELECT id, build_number, queue_seq, commit_sha FROM builds WHERE project_id = ? ORDER BY build_number", [projectId]);
  expect(builds.map((b) => Number(b.build_number))).toEqual(builds.map((_, i) => i + 1));
  const places = builds.map((b) => Number(b.queue_seq));
  expect(places).toEqual([...new Set(places)].sort((x, y) => x - y));
  const counter = await all(db, "SELECT next_build_number FROM projects WHERE id = ?", [projectId]);
  expect(Number(counter[0]!.next_build_number)).toBe(builds.length + 1);
  const numberOf = new Map(builds.map((b) => [String(b.id), Number(b.build_number)]));
  const deliveries = await all(db, "SELECT decisions FROM webhook_deliveries WHERE project_id = ? AND duplicate_of IS NULL", [projectId]);
  for (const d of deliveries.flatMap((row) => (JSON.parse(String(row.decisions)) as any[]).filter((x) => x.build))) {
    expect(d.build_number).toBe(numberOf.get(d.build_id)!);
    expect(d.reason).toEndWith(`: build #${d.build_number}`);
  }
  return builds;
}

async function buildsOf(commitSha: string) {
  return all(fixture.t.db, "SELECT id, build_number FROM builds WHERE commit_sha = ?", [commitSha]);
}

describe("merged pushes and the writers around them", () => {
  test("a build created through the API between them, in the same commit: every number once, and the queue in the order they were written", async () => {
    const { projectId } = fixture;
    const made = await pipeline(projectId, "api");
    held.holdNext(5, { transactions: true });
    // Two pushes, then the API's build, then two more: in the write queue in that order, one group.
    const before = [push(held.app, "api/a", sha(500)), push(held.app, "api/b", sha(501))];
    await waiting(2);
    const api = apiBuild(held.app, projectId, made.id, SHA_A);
    await waiting(3);
    const after = [push(held.app, "api/c", sha(502)), push(held.app, "api/d", sha(503))];
    const [a, b, c, d] = await Promise.all([...before, ...after]);
    const built = await api;
    expect([a, b, c, d].map((x) => x!.status)).toEqual([200, 200, 200, 200]);
    expect(built.status).toBe(201);
    const number = (x: { body: any }) => x.body.builds[0].build_number as number;
    const apiNumber = built.body.build.build_number as number;
    expect(Math.max(number(a!), number(b!))).toBeLessThan(apiNumber);
    expect(Math.min(number(c!), number(d!))).toBeGreaterThan(apiNumber);
    await expectConsistent(projectId);
  });

  test("another daemon on the database accepts a redelivery of one and the same body of another, and creates a build, before they are written: none builds twice, no number twice", async () => {
    const { projectId } = fixture;
    const made = await pipeline(projectId, "other");
    const redelivered = crypto.randomUUID();
    held.holdNext(4);
    const pending = [push(held.app, "other/a", sha(600), { delivery: redelivered }), push(held.app, "other/b", sha(601)), push(held.app, "other/c", sha(602))];
    await waiting(3);
    // The other daemon: the same delivery again, the same body under another delivery id (GitHub's content key), and a build of its own.
    const again = await push(second.app, "other/a", sha(600), { delivery: redelivered });
    const sameBody = await push(second.app, "other/b", sha(601));
    const api = await apiBuild(second.app, projectId, made.id, SHA_A);
    expect([again.status, sameBody.status, api.status]).toEqual([200, 200, 201]);
    expect([again.body.duplicate, sameBody.body.duplicate]).toEqual([false, false]);
    // The fourth lets the held daemon's writes go, all four together.
    const [a, b, c, d] = await Promise.all([...pending, push(held.app, "other/d", sha(603))]);
    expect([a, b, c, d].map((x) => x!.status)).toEqual([200, 200, 200, 200]);
    expect([a, b, c, d].map((x) => x!.body.duplicate)).toEqual([true, true, false, false]);
    expect([a, b].map((x) => x!.body.builds)).toEqual([[], []]);
    expect((await buildsOf(sha(600))).map((x) => x.id)).toEqual([again.body.builds[0].id]);
    expect((await buildsOf(sha(601))).map((x) => x.id)).toEqual([sameBody.body.builds[0].id]);
    for (const x of [c, d]) expect(x!.body.builds).toHaveLength(1);
    await expectConsistent(projectId);
  });

  test("the other daemon redelivers one after they were written: its duplicate, nothing built again", async () => {
    const { projectId } = fixture;
    await pipeline(projectId, "later");
    const delivery = crypto.randomUUID();
    held.holdNext(3);
    const [a] = await Promise.all([
      push(held.app, "later/a", sha(700), { delivery }),
      push(held.app, "later/b", sha(701)),
      push(held.app, "later/c", sha(702)),
    ]);
    expect(a!.body.builds).toHaveLength(1);
    const again = await push(second.app, "later/a", sha(700), { delivery });
    const sameBody = await push(second.app, "later/a", sha(700));
    expect([again.body.duplicate, sameBody.body.duplicate]).toEqual([true, true]);
    expect((await buildsOf(sha(700))).map((x) => x.id)).toEqual([a!.body.builds[0].id]);
    await expectConsistent(projectId);
  });

  test("another project's pipeline disabled before they are written: its push is decided again, the others build as planned", async () => {
    const { t, owner, projectId } = fixture;
    const website = (await createProject(t, owner, "acme/website")).id as string;
    await pipeline(projectId, "mixed");
    const gone = await pipeline(website, "mixed", "acme/website");
    held.holdNext(3);
    const pending = [push(held.app, "mixed/a", sha(800)), push(held.app, "mixed/w", sha(801), { repository: "acme/website" })];
    await waiting(2);
    // Through the fixture's own app: the held daemon still has the website's pipelines as it read them.
    expect((await t.call("PATCH", `/v1/pipelines/${gone.id}`, { token: owner, body: { enabled: false } })).status).toBe(200);
    const [a, w, b] = await Promise.all([...pending, push(held.app, "mixed/b", sha(802))]);
    expect([a, w, b].map((x) => x!.status)).toEqual([200, 200, 200]);
    expect([a, b].map((x) => x!.body.builds.length)).toEqual([1, 1]);
    expect(w!.body.builds).toEqual([]);
    expect(await buildsOf(sha(801))).toEqual([]);
    await expectConsistent(projectId);
    await expectConsistent(website);
  });

  test("the catalogue changed after they were verified: each is verified again and builds once", async () => {
    const { t, owner, host, projectId } = fixture;
    await pipeline(projectId, "catalogue");
    held.holdNext(3);
    const pending = [push(held.app, "catalogue/a", sha(900)), push(held.app, "catalogue/b", sha(901))];
    await waiting(2);
    // A new integration moves the catalogue's version, which pushes verified as last read are written under.
    await createGitlabIntegration(t, owner, host);
    const answers = await Promise.all([...pending, push(held.app, "catalogue/c", sha(902))]);
    expect(answers.map((x) => x.status)).toEqual([200, 200, 200]);
    expect(answers.map((x) => x.body.builds.length)).toEqual([1, 1, 1]);
    for (const i of [900, 901, 902]) expect(await buildsOf(sha(i))).toHaveLength(1);
    await expectConsistent(projectId);
  });
  test("one push's build refused by the database: the merged statements fail, each push runs alone, the others build once and only it fails", async () => {
    const { t, projectId } = fixture;
    await pipeline(projectId, "refused");
    // A stand-in for a statement that fails on the server (a constraint, a full disk): a trigger refusing one commit's build.
    await t.db.execute(
      `CREATE TRIGGER test_refused_build BEFORE INSERT ON builds WHEN NEW.commit_sha = '${sha(1001)}' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`,
    );
    try {
      held.holdNext(4);
      const answers = await Promise.all([1000, 1001, 1002, 1003].map((i) => push(held.app, `refused/${i}`, sha(i))));
      expect(answers.map((x) => x.status)).toEqual([200, 500, 200, 200]);
      for (const i of [0, 2, 3]) expect(answers[i]!.body.builds).toHaveLength(1);
      for (const i of [1000, 1002, 1003]) expect(await buildsOf(sha(i))).toHaveLength(1);
      expect(await buildsOf(sha(1001))).toEqual([]);
      const failed = await all(t.db, "SELECT result FROM webhook_deliveries WHERE commit_sha = ? OR delivery_id = ?", [
        sha(1001),
        answers[1]!.body.delivery_id ?? "",
      ]);
      expect(failed.map((d) => d.result)).not.toContain("built");
    } finally {
      await t.db.execute("DROP TRIGGER test_refused_build");
    }
    await expectConsistent(projectId);
  });
  test("both daemons merge pushes at once, each with the same delivery as the other's: one of the two builds, the other is its duplicate, the rest build", async () => {
    const { projectId } = fixture;
    await pipeline(projectId, "both");
    expect(await push(second.app, "both/warm2", sha(1)).then((x) => x.status)).toBe(200);
    const [same, sameBody] = [crypto.randomUUID(), crypto.randomUUID()];
    held.holdNext(3);
    secondHeld.holdNext(3);
    const answers = await Promise.all([
      push(held.app, "both/x", sha(1100), { delivery: same }),
      push(held.app, "both/y", sha(1101), { delivery: sameBody }),
      push(held.app, "both/a", sha(1102)),
      push(secondHeld.app, "both/x", sha(1100), { delivery: same }),
      // The same body under another delivery id: a duplicate by its content.
      push(secondHeld.app, "both/y", sha(1101)),
      push(secondHeld.app, "both/b", sha(1103)),
    ]);
    expect(answers.map((x) => x.status)).toEqual(Array(6).fill(200));
    for (const [i, j] of [
      [0, 3],
      [1, 4],
    ] as const) {
      expect([answers[i]!.body.duplicate, answers[j]!.body.duplicate].sort()).toEqual([false, true]);
      const built = answers[i]!.body.duplicate ? answers[j]! : answers[i]!;
      expect(built.body.builds).toHaveLength(1);
    }
    for (const i of [1100, 1101, 1102, 1103]) expect(await buildsOf(sha(i))).toHaveLength(1);
    await expectConsistent(projectId);
  });
  test("each is answered after the commit that holds its delivery and builds: another daemon reads them the moment it answers", async () => {
    const { projectId } = fixture;
    await pipeline(projectId, "committed");
    held.holdNext(4);
    const seen = await Promise.all(
      [1200, 1201, 1202, 1203].map((i) =>
        push(held.app, `committed/${i}`, sha(i)).then(async (answer) => ({
          answer,
          builds: await all(second.db, "SELECT id FROM builds WHERE commit_sha = ?", [sha(i)]),
          deliveries: await all(second.db, "SELECT result FROM webhook_deliveries WHERE id = ?", [answer.body.delivery_id]),
        })),
      ),
    );
    for (const { answer, builds, deliveries } of seen) {
      expect(answer.status).toBe(200);
      expect(builds.map((b) => b.id)).toEqual(answer.body.builds.map((b: any) => b.id));
      expect(deliveries).toEqual([{ result: "built" }]);
    }
    await expectConsistent(projectId);
  });
});
