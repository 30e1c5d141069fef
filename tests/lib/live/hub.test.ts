// The per-build log hub is Durable-Object-shaped (lib/live/hub.ts): the very class Roost runs
// in-process runs here as a real Durable Object in workerd, through miniflare, called by RPC on
// its stub. It is bundled from lib/live/hub.ts as is; the worker wraps it in a class extending
// DurableObject (Cloudflare's RPC base class) that forwards each method, and routes
// POST /<build>/<method> with a JSON array of arguments to the hub named by the build id.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { Miniflare } from "miniflare";
import { BuildLogHub, LocalLogHubNamespace, type HubPush, type LogFrameEntry } from "../../../lib/live/hub.ts";

let mf: Miniflare;

beforeAll(async () => {
  const built = await Bun.build({ entrypoints: [resolve(import.meta.dir, "../../../lib/live/hub.ts")], target: "browser", format: "esm" });
  if (!built.success) throw new Error(built.logs.join("\n"));
  const hubModule = await built.outputs[0]!.text();
  mf = new Miniflare({
    modules: true,
    // Durable Object RPC needs a compatibility date from 2024-04-03 on.
    compatibilityDate: "2025-04-01",
    script: `${hubModule}
      import { DurableObject } from "cloudflare:workers";
      export class LogHubObject extends DurableObject {
        constructor(ctx, env) { super(ctx, env); this.hub = new BuildLogHub(ctx, { windowLines: 5 }); }
        publish(entries) { return this.hub.publish(entries); }
        setStatus(status) { return this.hub.setStatus(status); }
        status() { return this.hub.status(); }
        since(afterSeq) { return this.hub.since(afterSeq); }
        wait(after, timeoutMs) { return this.hub.wait(after, timeoutMs); }
        lastSeq() { return this.hub.lastSeq(); }
        // A subscriber inside the object (an RPC caller would pass a stub): what it was pushed.
        watch() { this.seen = []; this.hub.subscribe({ push: (frame) => this.seen.push(new TextDecoder().decode(frame.bytes)) }); return true; }
        seenFrames() { return this.seen ?? []; }
      }
      export default {
        async fetch(request, env) {
          const [, build, method] = new URL(request.url).pathname.split("/");
          const stub = env.LOG_HUBS.get(env.LOG_HUBS.idFromName(build));
          const args = await request.json();
          let result = await stub[method](...args);
          if (result && result.bytes) result = { last: result.last, text: new TextDecoder().decode(result.bytes) };
          return Response.json(result ?? null);
        },
      };`,
    durableObjects: { LOG_HUBS: "LogHubObject" },
  });
}, 60_000);
afterAll(async () => mf?.dispose());

const call = async (build: string, method: string, ...args: unknown[]) =>
  (await mf.dispatchFetch(`http://roost/${build}/${method}`, { method: "POST", body: JSON.stringify(args) })).json();
const line = (seq: number, text = `line ${seq}`): LogFrameEntry => ({ seq, step: "build", stream: "stdout", ts: 1_795_400_000, text });
const frame = (e: LogFrameEntry) =>
  `id: ${e.seq}\nevent: log\ndata: ${JSON.stringify({ seq: e.seq, step: e.step, stream: e.stream, ts: e.ts, text: e.text })}\n\n`;

describe("BuildLogHub as a Durable Object in workerd, by RPC", () => {
  test("one instance per build id keeps its own last seq; a seq never goes back or repeats", async () => {
    expect(await call("build-a", "publish", [line(1), line(2), line(3)])).toBe(3);
    expect(await call("build-a", "publish", [line(2), line(3)])).toBe(3);
    expect(await call("build-b", "publish", [line(1)])).toBe(1);
    expect(await call("build-a", "lastSeq")).toBe(3);
    expect(await call("build-c", "lastSeq")).toBe(0);
  });

  test("a subscriber gets each batch once, encoded as the stream's log frames, in order", async () => {
    await call("build-s", "watch");
    await call("build-s", "publish", [line(1), line(2)]);
    await call("build-s", "publish", [line(2), line(3)]); // line 2 again: not pushed again
    expect(await call("build-s", "seenFrames")).toEqual([frame(line(1)) + frame(line(2)), frame(line(3))]);
  });

  test("since() serves the window to a reader after a seq, re-encoding a straddled batch, and null past the window", async () => {
    await call("build-w", "watch"); // the window is kept while the hub has subscribers
    await call("build-w", "publish", [line(1), line(2), line(3)]);
    await call("build-w", "publish", [line(4), line(5)]);
    expect(await call("build-w", "since", 2)).toEqual({ last: 5, text: frame(line(3)) + frame(line(4)) + frame(line(5)) });
    expect(await call("build-w", "since", 5)).toEqual({ last: 5, text: "" });
    // The window holds 5 lines here: a sixth pushes the first batch out, and a reader at 2 must read the database.
    await call("build-w", "publish", [line(6)]);
    expect(await call("build-w", "since", 2)).toBeNull();
    expect(await call("build-w", "since", 3)).toEqual({ last: 6, text: frame(line(4)) + frame(line(5)) + frame(line(6)) });
  });

  test("status only moves forward and is pushed as a status frame", async () => {
    await call("build-t", "watch");
    expect(await call("build-t", "setStatus", { status: "running", exit_code: null, ended: false, last_seq: 0 })).toEqual({
      status: "running",
      exit_code: null,
      ended: false,
      last_seq: 0,
    });
    expect(await call("build-t", "setStatus", { status: "queued", exit_code: null, ended: false, last_seq: 0 })).toEqual({
      status: "running",
      exit_code: null,
      ended: false,
      last_seq: 0,
    });
    expect(await call("build-t", "setStatus", { status: "succeeded", exit_code: 0, ended: true, last_seq: 7 })).toEqual({
      status: "succeeded",
      exit_code: 0,
      ended: true,
      last_seq: 7,
    });
    expect(await call("build-t", "seenFrames")).toEqual([
      'event: status\ndata: {"status":"running","exit_code":null}\n\n',
      'event: status\ndata: {"status":"succeeded","exit_code":0}\n\n',
    ]);
  });

  test("a waiting reader is woken by a publish on the same build, not another; a wait with nothing new returns at its timeout", async () => {
    const waiting = call("build-c2", "wait", 0, 5000);
    await Bun.sleep(100);
    await call("build-d", "publish", [line(1)]);
    await call("build-c2", "publish", [line(1), line(2)]);
    expect(await waiting).toBe(2);
    const started = Date.now();
    expect(await call("build-e", "wait", 0, 200)).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
  });
});

describe("BuildLogHub in-process (the same class behind LocalLogHubNamespace)", () => {
  test("behaves the same through the namespace/stub interface; pushes are synchronous and share one encoding", async () => {
    const hubs = new LocalLogHubNamespace();
    const pushes: HubPush[][] = [[], []];
    await hubs.get("b1").subscribe({ push: (f) => pushes[0]!.push(f) });
    await hubs.get("b1").subscribe({ push: (f) => pushes[1]!.push(f) });
    const waiting = hubs.get("b1").wait(0, 5000);
    await hubs.get("b2").publish([line(1)]);
    await hubs.get("b1").publish([line(1), line(2), line(3)]);
    expect(await waiting).toBe(3);
    expect(pushes[0]!.length).toBe(1);
    expect(pushes[0]![0]!.bytes).toBe(pushes[1]![0]!.bytes); // the same bytes, encoded once
    expect(new TextDecoder().decode(pushes[0]![0]!.bytes)).toBe(frame(line(1)) + frame(line(2)) + frame(line(3)));
    expect(await hubs.get("b2").wait(0, 10)).toBe(1);
  });

  test("a batch that does not follow on resets the window, so readers before it go to the database", () => {
    const hub = new BuildLogHub({ id: { toString: () => "b" } });
    hub.subscribe({ push: () => {} });
    hub.publish([line(1), line(2)]);
    hub.publish([line(5)]); // 3 and 4 were appended elsewhere
    expect(hub.since(2)).toBeNull();
    expect(new TextDecoder().decode(hub.since(4)!.bytes)).toBe(frame(line(5)));
  });

  test("without subscribers the hub keeps no text", () => {
    const hub = new BuildLogHub({ id: { toString: () => "b" } });
    hub.publish([line(1), line(2)]);
    expect(hub.lastSeq()).toBe(2);
    expect(hub.since(0)).toBeNull();
    expect(hub.since(2)).toEqual({ last: 2, bytes: new Uint8Array(0) });
  });
});
