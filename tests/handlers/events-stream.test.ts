// GET /v1/events (docs/api.md "Build events"): build changes of the caller's projects as
// Server-Sent Events, over a real socket (Bun.serve in front of the app, as the daemon runs it).
import { describe, expect, test } from "bun:test";
import { userWithRole, type TestApp } from "../helpers/app.ts";
import { SHA_A, createPipeline, createProject, fixturePerFile } from "../helpers/ci.ts";
import { SseReader, type SseEvent } from "../helpers/sse.ts";
import { startTwoDaemonsFixture, type SecondDaemon, type Served } from "../helpers/sockets.ts";
import { SESSION_COOKIE } from "../../lib/auth/browser-session.ts";
import { CHECK_MS as BUILDS_CHECK_MS } from "../../lib/live/build-feed.ts";
import { pollUntil } from "../helpers/poll.ts";

let t: TestApp;
let owner: string;
let server: Served;
/** A second daemon process on the same database file: its own connection, event bus, hubs and watcher. */
let second: SecondDaemon;
let secondServer: Served;
const abort = new AbortController();

fixturePerFile(
  () => startTwoDaemonsFixture(abort.signal),
  (f) => {
    ({ t, owner, server, second } = f);
    secondServer = second.server;
  },
);

async function open(headers: Record<string, string>, base = server): Promise<SseReader> {
  const response = await fetch(`http://127.0.0.1:${base.port}/v1/events`, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
  const reader = new SseReader(response);
  await reader.until((events) => events.some((e) => e.event === "ready"));
  return reader;
}

const builds = (events: SseEvent[]) => events.filter((e) => e.event === "build").map((e) => JSON.parse(e.data));
const has = (id: string, status: string) => (events: SseEvent[]) => builds(events).some((b) => b.id === id && b.status === status);

describe("GET /v1/events", () => {
  test("a build queued and canceled in the caller's project arrives as it happens, whole, with retry first", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    const stream = await open({ authorization: `Bearer ${owner}` });
    try {
      expect(stream.events[0]!.event).toBe("retry");
      const build = (await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
        .build;
      await stream.until(has(build.id, "queued"));
      const canceled = (await t.call("POST", `/v1/builds/${build.id}/cancel`, { token: owner })).body.build;
      await stream.until(has(build.id, "canceled"));
      // The same document GET /v1/builds/{id} answers.
      expect(builds(stream.events).at(-1)).toEqual(canceled);
      // Each version once, though the per-process check also reads it.
      await Bun.sleep(1500);
      expect(builds(stream.events).map((b) => `${b.id}:${b.status}`)).toEqual([`${build.id}:queued`, `${build.id}:canceled`]);
    } finally {
      await stream.cancel();
    }
  });

  test("with the browser's session cookie (EventSource sends no Authorization header)", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    const stream = await open({ cookie: `${SESSION_COOKIE}=${owner}` });
    try {
      const build = (await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
        .build;
      await stream.until(has(build.id, "queued"));
    } finally {
      await stream.cancel();
    }
  });

  test("a build in a project the caller may not see never arrives; one they are a member of does", async () => {
    const dev = await userWithRole(t, owner, "developer");
    const hidden = await createProject(t, owner);
    const hiddenPipeline = await createPipeline(t, owner, hidden.id);
    const mine = await createProject(t, owner);
    const minePipeline = await createPipeline(t, owner, mine.id);
    expect((await t.call("PUT", `/v1/projects/${mine.id}/members/${dev.id}`, { token: owner, body: { role: "viewer" } })).status).toBe(200);
    const stream = await open({ authorization: `Bearer ${dev.token}` });
    try {
      const secret = (await t.call("POST", `/v1/projects/${hidden.id}/builds`, { token: owner, body: { pipeline_id: hiddenPipeline.id, commit_sha: SHA_A } }))
        .body.build;
      await t.call("POST", `/v1/builds/${secret.id}/cancel`, { token: owner });
      const visible = (await t.call("POST", `/v1/projects/${mine.id}/builds`, { token: owner, body: { pipeline_id: minePipeline.id, commit_sha: SHA_A } })).body
        .build;
      await stream.until(has(visible.id, "queued"));
      // Past a check of the database too.
      await Bun.sleep(1500);
      expect(builds(stream.events).map((b) => b.project_id)).not.toContain(hidden.id);
      expect(builds(stream.events).map((b) => b.id)).not.toContain(secret.id);
    } finally {
      await stream.cancel();
    }
  });

  test("unauthenticated is 401 {code, message}", async () => {
    const response = await fetch(`http://127.0.0.1:${server.port}/v1/events`);
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({
      code: "missing_auth",
      message: "This endpoint takes a user session or an API token as 'Authorization: Bearer <token>'; the request has none.",
    });
  });

  test("a build queued and canceled through another daemon process on the same database arrives, with one check per process", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    const streams = await Promise.all([
      open({ authorization: `Bearer ${owner}` }),
      open({ authorization: `Bearer ${owner}` }),
      open({ authorization: `Bearer ${owner}` }),
    ]);
    try {
      const feed = t.ctx.live.builds;
      expect(feed.listeners).toBe(3);
      const before = feed.checks;
      const startedAt = performance.now();
      const through = (method: string, path: string, body?: unknown) => second.call(method, path, owner, body);
      const build = (await through("POST", `/v1/projects/${project.id}/builds`, { pipeline_id: pipeline.id, commit_sha: SHA_A })).build;
      for (const s of streams) await s.until(has(build.id, "queued"));
      await through("POST", `/v1/builds/${build.id}/cancel`);
      for (const s of streams) await s.until(has(build.id, "canceled"));
      // Three streams, one process: one check each CHECK_MS (timers only ever run late), not three.
      // Counted against the time it took, not a fixed number: a loaded host takes longer.
      const checks = feed.checks - before;
      const periods = Math.floor((performance.now() - startedAt) / BUILDS_CHECK_MS);
      expect(checks).toBeGreaterThan(0);
      expect(checks).toBeLessThanOrEqual(periods + 2);
    } finally {
      for (const s of streams) await s.cancel();
    }
    // The last stream closed (the server sees its socket end): the feed stops checking.
    await pollUntil(
      "the streams to close",
      () => t.ctx.live.builds.listeners,
      (n) => n === 0,
      5000,
      10,
    );
  });

  test("a client that stops reading is dropped once 256 KB wait for it; the others keep their stream", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    const request = () => new Request("http://127.0.0.1:8080/v1/events", { headers: { authorization: `Bearer ${owner}` } });
    const slow = new SseReader(await t.app.fetch(request(), "127.0.0.1"));
    await slow.until((events) => events.some((e) => e.event === "ready"));
    const reading = await open({ authorization: `Bearer ${owner}` });
    try {
      const feed = t.ctx.live.builds;
      expect(feed.listeners).toBe(2);
      // The slow client reads nothing more; each build frame is about 1.5 KB.
      let last = "";
      for (let i = 0; i < 250 && feed.listeners === 2; i++) {
        last = (await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body.build
          .id;
      }
      await Bun.sleep(50);
      expect(feed.listeners).toBe(1);
      expect(t.ctx.metrics.gauge("roost_event_streams", "").values.get("")).toBe(1);
      // Its stream ended with an error (the connection closes; EventSource reconnects).
      await expect(slow.until(() => false, 1000)).rejects.toThrow();
      // The reader that keeps up got every build.
      await reading.until(has(last, "queued"));
    } finally {
      await reading.cancel();
      await slow.cancel();
    }
  });

  test("a shutting-down daemon ends the stream with a reconnect hint", async () => {
    const stream = await open({ authorization: `Bearer ${owner}` }, secondServer);
    abort.abort();
    await stream.until((events) => events.some((e) => e.event === "shutdown"));
    expect(stream.events.at(-1)).toMatchObject({ event: "shutdown", data: '{"reconnect":true}' });
    await stream.until(() => stream.closed).catch(() => {});
    expect(stream.closed).toBe(true);
  });
});
