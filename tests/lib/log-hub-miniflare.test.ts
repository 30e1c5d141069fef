// The per-build log hub is Durable-Object-shaped (lib/log-hub.ts): the very class Roost runs
// in-process runs here as a real Durable Object in workerd, through miniflare. It is bundled
// from lib/log-hub.ts as is; a tiny worker routes /<build>/… to the hub named by the build id.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { Miniflare } from "miniflare";
import { LocalLogHubNamespace, notifyHub, waitOnHub } from "../../lib/log-hub.ts";

let mf: Miniflare;

beforeAll(async () => {
  const built = await Bun.build({ entrypoints: [resolve(import.meta.dir, "../../lib/log-hub.ts")], target: "browser", format: "esm" });
  if (!built.success) throw new Error(built.logs.join("\n"));
  const hubModule = await built.outputs[0]!.text();
  // One module: the bundled hub (exporting BuildLogHub) plus a default worker that routes to it.
  mf = new Miniflare({
    modules: true,
    script: `${hubModule}
      export default {
        async fetch(request, env) {
          const url = new URL(request.url);
          const [, build, ...rest] = url.pathname.split("/");
          const stub = env.LOG_HUBS.get(env.LOG_HUBS.idFromName(build));
          const body = request.method === "POST" ? await request.text() : undefined;
          return stub.fetch("http://hub/" + rest.join("/") + url.search, { method: request.method, body });
        },
      };`,
    durableObjects: { LOG_HUBS: "BuildLogHub" },
  });
}, 60_000);
afterAll(async () => mf?.dispose());

describe("BuildLogHub as a Durable Object in workerd", () => {
  test("one instance per build id keeps its own last seq", async () => {
    const notify = (build: string, seq: number) => mf.dispatchFetch(`http://roost/${build}/notify`, { method: "POST", body: JSON.stringify({ last_seq: seq }) }).then((r) => r.json());
    expect(await notify("build-a", 5)).toEqual({ last_seq: 5 });
    expect(await notify("build-a", 3)).toEqual({ last_seq: 5 }); // never goes back
    expect(await notify("build-b", 1)).toEqual({ last_seq: 1 });
    expect(await (await mf.dispatchFetch("http://roost/build-a/wait?after=4&timeout_ms=10")).json()).toEqual({ last_seq: 5 });
  });

  test("a waiting reader is woken by a notify on the same build, not another", async () => {
    const waiting = mf.dispatchFetch("http://roost/build-c/wait?after=0&timeout_ms=5000").then((r) => r.json());
    await Bun.sleep(100);
    await mf.dispatchFetch("http://roost/build-d/notify", { method: "POST", body: JSON.stringify({ last_seq: 9 }) });
    await mf.dispatchFetch("http://roost/build-c/notify", { method: "POST", body: JSON.stringify({ last_seq: 2 }) });
    expect(await waiting).toEqual({ last_seq: 2 });
  });

  test("a wait with nothing new returns at its timeout", async () => {
    const started = Date.now();
    expect(await (await mf.dispatchFetch("http://roost/build-e/wait?after=0&timeout_ms=200")).json()).toEqual({ last_seq: 0 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
  });
});

describe("BuildLogHub in-process (the same class behind LocalLogHubNamespace)", () => {
  test("behaves the same through the namespace/stub interface", async () => {
    const hubs = new LocalLogHubNamespace();
    const waiting = waitOnHub(hubs, "b1", 0, 5000);
    await notifyHub(hubs, "b2", 7);
    await notifyHub(hubs, "b1", 3);
    expect(await waiting).toBe(3);
    expect(await waitOnHub(hubs, "b2", 6, 10)).toBe(7);
  });
});
