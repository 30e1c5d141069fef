// Live log streams are fed by the build's log hub (docs/runners.md "Live logs", "The log hub"):
// each appended batch is encoded once and pushed to every stream of the build in this process;
// the database is read only to catch up, and an idle stream makes no query of its own but the
// check of the credential behind it every RECHECK_MS (one read by primary key).
import { describe, expect, test } from "bun:test";
import { type TestApp } from "../helpers/app.ts";
import { SHA_A, createPipeline, startCiFixture, fixturePerFile } from "../helpers/ci.ts";
import { recordingDb } from "../helpers/recording-db.ts";
import { createApp, type App } from "../../lib/http/app.ts";
import { routes } from "../../handlers/routes.ts";
import type { HubLimits } from "../../lib/live/hub.ts";
import { createLive } from "../../lib/live/live.ts";
import { CHECK_MS } from "../../lib/live/log-feed.ts";
import { RECHECK_MS } from "../../lib/auth/stream-guard.ts";

let t: TestApp, owner: string, projectId: string;
fixturePerFile(startCiFixture, (fixture) => ({ t, owner, projectId } = fixture));

/** Every statement the app runs, by kind. */
interface Counts {
  pages: number; // a page of log lines (a stream catching up, or the per-build check filling the hub)
  checks: number; // the per-build status and last-seq check
  credentials: number; // each stream's check of the session behind its stream token
  other: number;
}

/**
 * An app on the test database whose queries are counted, with its own log hubs and watcher, as
 * a daemon process would have. Runner calls and streams go through it.
 */
function countingApp(limits: Partial<HubLimits> = {}, logCheckMs?: number): { app: App; counts: Counts; reset(): void } {
  const counts: Counts = { pages: 0, checks: 0, credentials: 0, other: 0 };
  const db = recordingDb(t.db, (sql) => {
    if (sql.includes("FROM build_logs WHERE build_id = +? AND seq > ?")) counts.pages++;
    else if (sql.includes("FROM builds b LEFT JOIN build_log_stats")) counts.checks++;
    else if (sql.includes("FROM sessions s JOIN users u")) counts.credentials++;
    else counts.other++;
  });
  const app = createApp({ ...t.ctx, db, live: createLive({ db, events: t.ctx.events }, limits, logCheckMs) }, routes);
  return { app, counts, reset: () => Object.assign(counts, { pages: 0, checks: 0, credentials: 0, other: 0 }) };
}

/** A running build with a claimed job, and a function appending lines through `app` as its runner. */
async function runningBuild(app: App) {
  // A pipeline of its own: one build at a time runs per pipeline.
  const pipelineId = (await createPipeline(t, owner, projectId)).id;
  const build = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, commit_sha: SHA_A } })).body.build;
  const created = (await t.call("POST", "/v1/runners", { token: owner, body: { name: `r-${crypto.randomUUID().slice(0, 8)}` } })).body;
  const runner = { id: created.runner.id as string, token: created.token as string };
  await t.call("POST", `/v1/runners/${runner.id}/connect`, { token: runner.token, body: { capabilities: { os: "linux", arch: "x64" } } });
  const job = (await t.call("POST", `/v1/runners/${runner.id}/jobs/claim`, { token: runner.token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } }))
    .body.job;
  let next = 0;
  const runnerCall = async (method: string, path: string, body: unknown) => {
    const response = await app.fetch(
      new Request(`http://127.0.0.1:8080/v1/runners/${runner.id}${path}`, {
        method,
        headers: { authorization: `Bearer ${runner.token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
      "127.0.0.1",
    );
    return { status: response.status, body: (await response.json()) as any };
  };
  const append = async (count: number, text = (i: number) => `line ${i}`) => {
    const res = await runnerCall("POST", `/jobs/${job.job_id}/logs`, {
      first_line: next,
      lines: Array.from({ length: count }, (_, k) => ({ text: text(next + k) })),
    });
    expect(res.status).toBe(202);
    next = res.body.next_line;
  };
  const finish = async () => runnerCall("POST", `/jobs/${job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: next });
  return { build, append, finish };
}

/** A stream read as a client reads it: text so far, and the log ids in it. */
class Stream {
  text = "";
  done = false;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();

  constructor(readonly response: Response) {
    expect(response.status).toBe(200);
    this.#reader = response.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
  }

  ids(): number[] {
    return [...this.text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  }

  /** Reads one chunk. */
  async read(): Promise<void> {
    const { value, done } = await this.#reader.read();
    if (done) this.done = true;
    else this.text += this.#decoder.decode(value, { stream: true });
  }

  async until(predicate: () => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (this.done) throw new Error(`stream closed: ${this.text.slice(-300)}`);
      if (Date.now() > deadline) throw new Error(`timed out: ${this.text.slice(-300)}`);
      await Promise.race([this.read(), Bun.sleep(Math.max(1, deadline - Date.now()))]);
    }
  }

  cancel(): Promise<void> {
    return this.#reader.cancel();
  }
}

async function openStream(app: App, buildId: string, lastEventId?: number): Promise<Stream> {
  const { token } = (await t.call("POST", `/v1/builds/${buildId}/stream-token`, { token: owner })).body;
  const headers: Record<string, string> = lastEventId === undefined ? {} : { "last-event-id": String(lastEventId) };
  return new Stream(await app.fetch(new Request(`http://127.0.0.1:8080/v1/builds/${buildId}/logs/stream?token=${token}`, { headers }), "127.0.0.1"));
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("fan-out from the log hub", () => {
  test("1000 streams of one build each get every line once, in order, and none reads the database for them", async () => {
    const { app, counts, reset } = countingApp();
    const { build, append } = await runningBuild(app);
    const streams: Stream[] = [];
    for (let i = 0; i < 1000; i++) streams.push(await openStream(app, build.id));
    await Promise.all(streams.map((s) => s.until(() => s.text.includes("event: status"))));
    reset();
    for (let batch = 0; batch < 5; batch++) await append(20);
    await Promise.all(streams.map((s) => s.until(() => s.ids().length >= 100)));
    for (const s of streams) expect(s.ids()).toEqual(range(1, 100));
    // The lines went out from memory: no stream read a page of them back.
    expect(counts.pages).toBe(0);
    await Promise.all(streams.map((s) => s.cancel()));
  }, 240_000); // 1000 streams: minutes on a loaded machine, seconds on an idle one

  test("idle streams make no query of their own but their credential's: one check per build every CHECK_MS, however many streams", async () => {
    const { app, counts, reset } = countingApp();
    const { build, append } = await runningBuild(app);
    await append(3);
    const streams: Stream[] = [];
    for (let i = 0; i < 50; i++) streams.push(await openStream(app, build.id));
    await Promise.all(streams.map((s) => s.until(() => s.ids().length === 3)));
    await Bun.sleep(50);
    reset();
    await Bun.sleep(2000);
    expect(counts.other).toBe(0);
    expect(counts.pages).toBe(0);
    expect(counts.checks).toBeGreaterThanOrEqual(1);
    expect(counts.checks).toBeLessThanOrEqual(Math.ceil(2000 / CHECK_MS) + 1);
    // Each stream asks again whether the owner's session still works, one read every RECHECK_MS
    // (an owner sees every project without a membership read).
    expect(counts.credentials).toBeLessThanOrEqual(streams.length * (Math.ceil(2000 / RECHECK_MS) + 1));
    // And the streams are alive: a line still reaches all of them.
    await append(1);
    await Promise.all(streams.map((s) => s.until(() => s.ids().length === 4)));
    await Promise.all(streams.map((s) => s.cancel()));
  }, 120_000);

  test("a late joiner with an old Last-Event-ID reads the database page by page, then gets live lines: no gap, no duplicate", async () => {
    // The hub keeps the last 100 lines here: older ones come from the database.
    const { app, counts, reset } = countingApp({ windowLines: 100 });
    const { build, append } = await runningBuild(app);
    const watching = await openStream(app, build.id);
    for (let i = 0; i < 24; i++) await append(50);
    await watching.until(() => watching.ids().length === 1200);
    reset();
    const late = await openStream(app, build.id, 100);
    await late.read(); // retry
    await late.read(); // status and the first page from the database
    expect(late.ids()[0]).toBe(101);
    // Lines appended while it is still catching up are buffered, then sent after the catch-up, once.
    await append(50);
    await late.until(() => late.ids().length === 1150);
    expect(counts.pages).toBeGreaterThanOrEqual(2); // 101..600, 601..1100 at 500 a page; the rest from the window
    await append(7);
    await late.until(() => late.ids().length === 1157);
    expect(late.ids()).toEqual(range(101, 1257));
    await watching.until(() => watching.ids().length === 1257);
    expect(watching.ids()).toEqual(range(1, 1257));
    await Promise.all([late.cancel(), watching.cancel()]);
  }, 30_000);

  test("a reconnect inside the hub's window resumes from memory, mid-batch, without reading the database", async () => {
    const { app, counts, reset } = countingApp();
    const { build, append } = await runningBuild(app);
    const watching = await openStream(app, build.id);
    await append(10);
    await watching.until(() => watching.ids().length === 10);
    reset();
    const again = await openStream(app, build.id, 4); // lines 1..10 were one batch
    await again.until(() => again.ids().length === 6);
    expect(again.ids()).toEqual(range(5, 10));
    expect(counts.pages).toBe(0);
    await Promise.all([again.cancel(), watching.cancel()]);
  });

  test("a client that stops reading gets no more pushes past 1 MiB queued, then catches up when it reads: every line once", async () => {
    // A 64 KiB window, so catching up reads the database.
    const { app, counts, reset } = countingApp({ windowBytes: 64 * 1024 });
    const { build, append } = await runningBuild(app);
    const slow = await openStream(app, build.id);
    await slow.until(() => slow.text.includes("event: status"));
    reset();
    const pad = "x".repeat(200);
    for (let i = 0; i < 12; i++) await append(500, (n) => `line ${n} ${pad}`); // 6000 lines, about 1.4 MB
    await slow.until(() => slow.ids().length >= 6000, 30_000);
    expect(slow.ids()).toEqual(range(1, 6000));
    expect(counts.pages).toBeGreaterThan(0); // it fell behind and read back from the database
    await slow.cancel();
  }, 60_000);

  test("a canceled build whose runner is still sending ends its streams when the job finishes, with every line", async () => {
    // Told by the cancel and the finish themselves (in-process events), not by the timed checks:
    // those come once a minute here, after the test's deadlines. (A bound of 250 ms after the
    // finish against a 500 ms check failed when a loaded host stalled the process that long.)
    const { app } = countingApp({}, 60_000);
    const { build, append, finish } = await runningBuild(app);
    const stream = await openStream(app, build.id);
    await append(2);
    await stream.until(() => stream.ids().length === 2);
    expect((await t.call("POST", `/v1/builds/${build.id}/cancel`, { token: owner })).status).toBe(200);
    await append(1); // the runner's last line, before it notices the cancel
    await stream.until(() => stream.text.includes('"status":"canceled"') && stream.ids().length === 3);
    expect(stream.text).not.toContain("event: end");
    expect((await finish()).status).toBe(200);
    await stream.until(() => stream.done);
    expect(stream.ids()).toEqual([1, 2, 3]);
    expect(stream.text.endsWith(`event: end\ndata: ${JSON.stringify({ status: "canceled", exit_code: null, last_seq: 3 })}\n\n`)).toBe(true);
  });
});
