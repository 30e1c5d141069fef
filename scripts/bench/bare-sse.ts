// The SSE baseline: a bare Bun.serve fan-out. GET /stream subscribes; POST /publish writes the
// body as one event to every subscriber. Prints its url.
export {};
const encoder = new TextEncoder();
const subscribers = new Set<ReadableStreamDefaultController<Uint8Array>>();
let seq = 0;
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/publish") {
      const data = await request.text();
      const chunk = encoder.encode(`id: ${++seq}\nevent: log\ndata: ${data}\n\n`);
      for (const c of subscribers) c.enqueue(chunk);
      return new Response("ok");
    }
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        controller = c;
        subscribers.add(c);
        c.enqueue(encoder.encode("retry: 3000\n\n"));
      },
      cancel() {
        subscribers.delete(controller);
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
  },
});
console.log(JSON.stringify({ url: `http://127.0.0.1:${server.port}`, pid: process.pid }));
