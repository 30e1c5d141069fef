// GET /v1/events (docs/api.md "Build events") when many large builds change through another daemon
// process: the feed (lib/live/build-feed.ts) finds those changes in the database, and a build
// carries its config snapshot and changelog. A libSQL server answers at most 10 MB a request
// (RESPONSE_TOO_LARGE), a file has no such limit; on either, the changes arrive. Run on a libSQL
// server too (scripts/test, ROOST_TEST_DATABASE=sqld).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { userWithRole, type TestApp } from "../helpers/app.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, createPipeline, createProject, startGithubFixture } from "../helpers/ci.ts";
import { SseReader, type SseEvent } from "../helpers/sse.ts";
import { createApp } from "../../lib/http/app.ts";
import { routes } from "../../handlers/routes.ts";
import { EventBus } from "../../lib/daemon/events.ts";
import { createLive } from "../../lib/live/live.ts";
import { openDatabase, type Db } from "../../lib/db/client.ts";
import { CHECK_PAGE } from "../../lib/live/build-feed.ts";

let t: TestApp;
let host: HostApiStandIn;
let owner: string;
let server: ReturnType<typeof Bun.serve>;
/** A second daemon process on the same database: its own connection, event bus and feed. */
let second: Db;
let secondServer: ReturnType<typeof Bun.serve>;

function serve(app: ReturnType<typeof createApp>) {
  return Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request, srv) {
      return app.fetch(request, "127.0.0.1", { setIdleTimeout: (seconds) => srv.timeout(request, seconds), setBodyTimeout() {} });
    },
  });
}

beforeAll(async () => {
  ({ t, host, owner } = await startGithubFixture());
  server = serve(t.app);
  second = await openDatabase(t.config.databaseUrl);
  const events = new EventBus();
  secondServer = serve(createApp({ ...t.ctx, db: second, events, live: createLive({ db: second, events }) }, routes));
});
afterAll(async () => {
  server.stop(true);
  secondServer.stop(true);
  second.close();
  t.close();
  await host.stop();
});

/** A call to the second daemon. */
const through = (method: string, path: string, body?: unknown) =>
  fetch(`http://127.0.0.1:${secondServer.port}${path}`, {
    method,
    headers: { authorization: `Bearer ${owner}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).then((r) => r.json() as Promise<any>);

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
    const columns = ((await second.execute("PRAGMA table_info(builds)")).rows as unknown as { name: string }[]).map((c) => c.name);
    const copied: Record<string, string> = {
      id: "printf('%s-%04d', b.id, i)",
      build_number: "b.build_number + i",
      status: "'canceled'",
      queue_seq: "NULL",
      changelog: "?",
    };
    await second.execute(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${copies})
       INSERT INTO builds (${columns.join(", ")}) SELECT ${columns.map((c) => copied[c] ?? `b.${c}`).join(", ")} FROM builds b, n WHERE b.id = ?`,
      [Array.from({ length: 50 }, () => "語".repeat(1_000)).join("\n"), source.id],
    );
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
