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
