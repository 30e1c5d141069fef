// GET /v1/events (docs/api.md "Build events") when many large builds change through another daemon
// process: the feed (lib/live/build-feed.ts) finds those changes in the database, and a build
// carries its config snapshot and changelog. A libSQL server answers at most 10 MB a request
// (RESPONSE_TOO_LARGE), a file has no such limit; on either, the changes arrive. Run on a libSQL
// server too (scripts/test, ROOST_TEST_DATABASE=sqld).
import { expect, test } from "bun:test";
import { userWithRole, type TestApp } from "../helpers/app.ts";
import { SHA_A, createPipeline, createProject, fixturePerFile } from "../helpers/ci.ts";
import { SseReader, type SseEvent } from "../helpers/sse.ts";
import { startTwoDaemonsFixture, type SecondDaemon, type Served } from "../helpers/sockets.ts";
import { copyBuild } from "../helpers/rows.ts";
import { CHECK_PAGE } from "../../lib/live/build-feed.ts";

let t: TestApp;
let owner: string;
let server: Served;
/** A second daemon process on the same database file: its own connection, event bus, hubs and watcher. */
let second: SecondDaemon;

fixturePerFile(
  () => startTwoDaemonsFixture(),
  (f) => ({ t, owner, server, second } = f),
);

/** A call to the second daemon. */
const through = (method: string, path: string, body?: unknown) => second.call(method, path, owner, body);

const builds = (events: SseEvent[]) => events.filter((e) => e.event === "build").map((e) => JSON.parse(e.data));

/**
 * A developer's stream (they see one project), then through the second daemon `copies` builds of
 * another project, each with a changelog of 150 KB, and one build of theirs, all in one second (the
 * test clock stands still): that one arrives, and nothing else.
 */
async function burstThenVisible(copies: number): Promise<void> {
  const dev = await userWithRole(t, owner, "developer");
  const big = await createProject(t, owner);
  const bigPipeline = await createPipeline(t, owner, big.id);
  const mine = await createProject(t, owner);
  const minePipeline = await createPipeline(t, owner, mine.id);
  expect((await t.call("PUT", `/v1/projects/${mine.id}/members/${dev.id}`, { token: owner, body: { role: "viewer" } })).status).toBe(200);
  // The developer's stream, on the first daemon: it sees only their project's builds, but the
  // feed behind it reads every build that changed.
  const response = await fetch(`http://127.0.0.1:${server.port}/v1/events`, { headers: { authorization: `Bearer ${dev.token}` } });
  expect(response.status).toBe(200);
  const stream = new SseReader(response);
  try {
    await stream.until((events) => events.some((e) => e.event === "ready"));
    // Through the second daemon: a build, then its copies, canceled, each with a changelog of 50
    // lines of 1,000 three-byte characters (150 KB).
    const source = (await through("POST", `/v1/projects/${big.id}/builds`, { pipeline_id: bigPipeline.id, commit_sha: SHA_A })).build;
    await copyBuild(second.db, source.id, copies, { changelog: Array.from({ length: 50 }, () => "語".repeat(1_000)).join("\n"), status: "canceled" });
    // Then one in the developer's project, changed in the same second (the test clock stands still).
    const visible = (await through("POST", `/v1/projects/${mine.id}/builds`, { pipeline_id: minePipeline.id, commit_sha: SHA_A })).build;
    await stream.until((events) => builds(events).some((b) => b.id === visible.id), 30_000);
    const arrived = builds(stream.events);
    expect(arrived.map((b) => [b.id, b.project_id, b.status])).toEqual([[visible.id, mine.id, "queued"]]);
  } finally {
    await stream.cancel();
  }
}

test("a build changed through another daemon arrives while 100 builds of 15 MB in all change in the same second", async () => {
  // More than a libSQL server answers at once (10 MB) when read whole.
  await burstThenVisible(100);
}, 60_000);

test("a build changed through another daemon arrives while more builds than a check reads change in the same second", async () => {
  // 250 of 37 MB: read whole over two checks, the first 200 read in pieces on a libSQL server.
  await burstThenVisible(CHECK_PAGE + 50);
}, 60_000);

test("each change of a bulk update through another daemon arrives once, the whole burst within a few checks", async () => {
  // 2,500 builds made, then all failed by one statement, each in one second (the test clock stands
  // still): the feed reads the versions VERSION_PAGE at a time and the builds CHECK_PAGE at a time,
  // letting other requests run between reads, in one check. Before, a check read every version
  // changed since the last at once and handed out CHECK_PAGE builds: 13 checks of a second each.
  const copies = 2_500;
  const project = await createProject(t, owner);
  const pipeline = await createPipeline(t, owner, project.id);
  const response = await fetch(`http://127.0.0.1:${server.port}/v1/events`, { headers: { authorization: `Bearer ${owner}` } });
  const stream = new SseReader(response);
  try {
    await stream.until((events) => events.some((e) => e.event === "ready"));
    const source = (await through("POST", `/v1/projects/${project.id}/builds`, { pipeline_id: pipeline.id, commit_sha: SHA_A })).build;
    await copyBuild(second.db, source.id, copies, { changelog: "", status: "canceled" });
    const copied = (events: SseEvent[], status: string) => builds(events).filter((b) => b.id.startsWith(`${source.id}-`) && b.status === status);
    // Counted as the events come (each read of the stream would parse every event again).
    const seen = { canceled: 0, failed: 0, read: 0 };
    const count = (status: "canceled" | "failed") => (events: SseEvent[]) => {
      for (; seen.read < events.length; seen.read++)
        for (const s of ["canceled", "failed"] as const) if (events[seen.read]!.data.includes(`"status":"${s}"`)) seen[s]++;
      return seen[status] >= copies;
    };

    await stream.until(count("canceled"), 8_000);

    await second.db.execute({ sql: "UPDATE builds SET status = 'failed' WHERE id > ? AND id < ?", args: [`${source.id}-`, `${source.id}.`] });
    await stream.until(count("failed"), 8_000);
    // One check more, which finds nothing new: no change is handed out twice.
    const checks = t.ctx.live.builds.checks;
    await stream.until(() => t.ctx.live.builds.checks > checks + 1, 5_000);

    const ids = (status: string) => copied(stream.events, status).map((b) => b.id);
    const expected = Array.from({ length: copies }, (_, i) => `${source.id}-${String(i + 1).padStart(4, "0")}`);
    expect(ids("canceled").toSorted()).toEqual(expected);
    expect(ids("failed").toSorted()).toEqual(expected);
  } finally {
    await stream.cancel();
  }
}, 60_000);
