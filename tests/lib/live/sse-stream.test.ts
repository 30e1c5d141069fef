// The one SSE stream type both live routes are built on (lib/live/sse-stream.ts): what every
// stream sends alike (the opening retry, keepalive, the shutdown hint), its byte-bounded queue and
// its end, read as a client reads the response body. The credential guard is exercised through
// the routes (tests/handlers/streams-revocation.test.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../helpers/app.ts";
import type { RequestContext } from "../../../lib/http/context.ts";
import type { Principal } from "../../../lib/auth/principal.ts";
import { SseStream, type SseProducer, type SseStreamOptions } from "../../../lib/live/sse-stream.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const GAUGE = { name: "roost_test_streams", help: "Open test streams." };
// Streams here end within the guard's first check (RECHECK_MS, 2 s): the principal is never read.
const principal = { kind: "session", sessionId: "s" } as Principal;

function context(shutdown = new AbortController().signal): RequestContext {
  return {
    ...t.ctx,
    shutdown,
    request: new Request("http://127.0.0.1/"),
    peer: null,
    requestId: "r",
    setIdleTimeout() {},
    setBodyTimeout() {},
  };
}

function open(options: Partial<SseStreamOptions> = {}, producer: (stream: SseStream) => SseProducer = () => ({ start() {} }), ctx = context()) {
  const stream = new SseStream(ctx, { gauge: GAUGE, maxQueuedBytes: 64, guard: { principal, stillAllowed: async () => null }, ...options });
  const response = stream.response(producer(stream));
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const read = async (): Promise<boolean> => {
    const { value, done } = await reader.read();
    if (!done) text += decoder.decode(value, { stream: true });
    return done;
  };
  return { stream, response, read, text: () => text, cancel: () => reader.cancel() };
}

const streamsOpen = () => t.ctx.metrics.gauge(GAUGE.name, GAUGE.help).values.get("") ?? 0;

describe("SseStream", () => {
  test("opens with the reconnect delay, as text/event-stream, and counts itself open until it ends", async () => {
    const s = open({ headers: { "referrer-policy": "no-referrer" } });
    expect(s.response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(s.response.headers.get("cache-control")).toBe("no-cache, no-store");
    expect(s.response.headers.get("x-accel-buffering")).toBe("no");
    expect(s.response.headers.get("referrer-policy")).toBe("no-referrer");
    await s.read();
    expect(s.text()).toBe("retry: 3000\n\n");
    expect(streamsOpen()).toBe(1);
    s.stream.write("event: ready\ndata: {}\n\n");
    s.stream.close();
    while (!(await s.read()));
    expect(s.text()).toBe("retry: 3000\n\nevent: ready\ndata: {}\n\n");
    expect(streamsOpen()).toBe(0);
  });

  test("pings in each keepalive period with nothing else written, not while frames flow, not to a client that has not read", async () => {
    const s = open({ keepaliveMs: 200 });
    await s.read();
    // A frame every 20 ms: no period passes without one.
    for (let i = 0; i < 12; i++) {
      s.stream.write(`event: n\ndata: ${i}\n\n`);
      await Bun.sleep(20);
      await s.read();
    }
    expect(s.text()).not.toContain(": ping");
    await s.read(); // the first period with nothing else written ends with a ping
    expect(s.text().endsWith("data: 11\n\n: ping\n\n")).toBe(true);
    // Unread bytes wait in the queue: no ping piles up behind them.
    s.stream.write("event: n\ndata: unread\n\n");
    await Bun.sleep(500);
    expect(s.stream.queued).toBe("event: n\ndata: unread\n\n".length);
    await s.cancel();
  });

  test("a daemon shutting down ends the stream with the reconnect hint, also one that opens after it began", async () => {
    const shutdown = new AbortController();
    const s = open({}, undefined, context(shutdown.signal));
    await s.read();
    shutdown.abort();
    while (!(await s.read()));
    expect(s.text()).toBe('retry: 3000\n\nretry: 1000\nevent: shutdown\ndata: {"reconnect":true}\n\n');
    let started = false;
    const late = open({}, () => ({ start: () => void (started = true) }), context(shutdown.signal));
    while (!(await late.read()));
    expect(late.text()).toBe('retry: 3000\n\nretry: 1000\nevent: shutdown\ndata: {"reconnect":true}\n\n');
    expect(started).toBe(false);
  });

  test("send drops a client with more than maxQueuedBytes waiting; write queues whatever waits", async () => {
    const cleaned: string[] = [];
    const s = open({ maxQueuedBytes: 64 });
    s.stream.onClose(() => cleaned.push("unsubscribed"));
    await s.read();
    s.stream.write("x".repeat(100)); // past the bound, but write does not look
    expect(s.stream.open).toBe(true);
    expect(s.stream.behind).toBe(true);
    s.stream.send("event: n\ndata: 1\n\n");
    expect(s.stream.open).toBe(false);
    expect(cleaned).toEqual(["unsubscribed"]);
    await expect(s.read()).rejects.toThrow("the client stopped reading its event stream");
    // Registered after the end: runs at once.
    s.stream.onClose(() => cleaned.push("late"));
    expect(cleaned).toEqual(["unsubscribed", "late"]);
  });

  test("pull runs when the client has taken everything; a pull that throws ends the stream and its cleanups run", async () => {
    let pulls = 0;
    let unsubscribed = false;
    const s = open({}, (stream) => ({
      start: () => stream.onClose(() => (unsubscribed = true)),
      async pull() {
        if (++pulls === 3) throw new Error("database gone");
        stream.write(`event: page\ndata: ${pulls}\n\n`);
      },
    }));
    const stream = s.stream;
    await s.read();
    await s.read();
    await expect(async () => {
      while (!(await s.read()));
    }).toThrow("database gone");
    expect(s.text()).toBe("retry: 3000\n\nevent: page\ndata: 1\n\nevent: page\ndata: 2\n\n");
    expect(unsubscribed).toBe(true);
    expect(stream.open).toBe(false);
  });
});
