// One Server-Sent Events response (WHATWG HTML §9.2 "Server-sent events"), the stream type both
// live routes are built on (log-stream.ts, event-stream.ts). It owns what every stream does alike:
// 1. the opening `retry: 3000`, EventSource's reconnect delay;
// 2. the byte-bounded queue: the body is a ReadableStream sized in bytes with a high-water mark
//    of 1, so `queued` is what the client has not taken yet. `send` drops a client with more than
//    maxQueuedBytes waiting (EventSource reconnects); a producer that can catch up later from
//    elsewhere checks `behind` and stops writing instead;
// 3. keepalive: `: ping` every KEEPALIVE_MS in which nothing else was written, once the client has
//    taken everything, so proxies keep an idle connection (nginx's proxy_read_timeout is 60 s);
// 4. the credential guard (lib/auth/stream-guard.ts): the credential that opened the stream is
//    checked again every RECHECK_MS; once it stops working, `event: revoked` {code, message} and
//    the end (docs/api.md "Streams end with their credential");
// 5. shutdown: when the daemon begins a graceful shutdown, `retry: 1000` and `event: shutdown`,
//    then the end, so the client reconnects to another process at once;
// 6. the gauge of open streams on /metrics, and no idle timeout for this connection.
// What goes out in between comes from a producer: `start` once, `pull` whenever the client has
// taken everything queued.
import type { RequestContext } from "../http/context.ts";
import type { Principal } from "../auth/principal.ts";
import { guardStream, type StreamRefusal } from "../auth/stream-guard.ts";
import { sseFrame } from "./sse-frame.ts";

const KEEPALIVE_MS = 15_000;
const OPENING = "retry: 3000\n\n";
const PING = ": ping\n\n";
const SHUTDOWN = `retry: 1000\n${sseFrame("shutdown", { reconnect: true })}`;
const HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-store",
  "x-accel-buffering": "no",
  connection: "keep-alive",
};
const encoder = new TextEncoder();

export interface SseStreamOptions {
  /** The gauge of this kind's open streams on /metrics. */
  gauge: { name: string; help: string };
  /** Bytes that may wait for the client: past them `behind` holds and `send` drops the client. */
  maxQueuedBytes: number;
  /** Who opened the stream, and what else must still hold for them (null: still allowed). */
  guard: { principal: Principal; stillAllowed(principal: Principal): Promise<StreamRefusal | null> };
  /** Response headers besides the Server-Sent Events ones. */
  headers?: Record<string, string>;
  /** The keepalive period: a `: ping` ends each one in which nothing else was written (KEEPALIVE_MS unless given). */
  keepaliveMs?: number;
}

export interface SseProducer {
  /** Runs once after the opening frame, unless the stream has already ended (subscribe here). */
  start(): Promise<void> | void;
  /** Runs whenever the client has taken everything queued (a producer that writes as it is read). */
  pull?(): Promise<void>;
}

export class SseStream {
  #controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  #open = true;
  /** Something went out since the last keepalive tick. */
  #wrote = false;
  readonly #cleanups: (() => void)[] = [];

  constructor(
    readonly ctx: RequestContext,
    readonly options: SseStreamOptions,
  ) {}

  get open(): boolean {
    return this.#open;
  }

  /** Bytes queued that the client has not taken yet. */
  get queued(): number {
    return 1 - (this.#controller?.desiredSize ?? 1);
  }

  /** More than maxQueuedBytes wait for the client. */
  get behind(): boolean {
    return this.queued > this.options.maxQueuedBytes;
  }

  /** Queues a frame (or frames) for the client, whatever already waits; nothing once the stream ended. */
  write(frames: string | Uint8Array): void {
    if (!this.#open || !this.#controller) return;
    this.#controller.enqueue(typeof frames === "string" ? encoder.encode(frames) : frames);
    this.#wrote = true;
  }

  /** Queues a frame, or drops a client that is `behind`: its connection ends and EventSource reconnects. */
  send(frames: string | Uint8Array): void {
    if (this.#open && this.behind) return this.fail(new Error("the client stopped reading its event stream"));
    this.write(frames);
  }

  /** Runs `cleanup` when the stream ends (at once when it already has). */
  onClose(cleanup: () => void): void {
    if (this.#open) this.#cleanups.push(cleanup);
    else cleanup();
  }

  /** Ends the stream after what is queued. */
  close(): void {
    if (this.#end()) this.#controller?.close();
  }

  /** Ends the stream with an error: the connection is cut and EventSource reconnects. */
  fail(error: unknown): void {
    if (this.#end()) this.#controller?.error(error);
  }

  /** The response whose body is this stream, fed by `producer`. */
  response(producer: SseProducer): Response {
    // The connection stays open as long as the client keeps it: lift Bun's idle timeout for this one.
    this.ctx.setIdleTimeout(0);
    const gauge = this.ctx.metrics.gauge(this.options.gauge.name, this.options.gauge.help);
    gauge.inc({}, 1);
    this.onClose(() => gauge.inc({}, -1));
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller;
          this.write(OPENING);
          if (this.ctx.shutdown.aborted) return this.#shutDown();
          this.#watchOver();
          return this.#failing(() => producer.start());
        },
        pull: () => this.#failing(() => producer.pull?.()),
        cancel: () => void this.#end(),
      },
      { highWaterMark: 1, size: (chunk) => chunk?.byteLength ?? 0 },
    );
    return new Response(body, { headers: { ...HEADERS, ...this.options.headers } });
  }

  /** Shutdown, the credential guard and keepalive, each stopped when the stream ends. */
  #watchOver(): void {
    const { ctx } = this;
    const onShutdown = () => this.#shutDown();
    ctx.shutdown.addEventListener("abort", onShutdown);
    this.onClose(() => ctx.shutdown.removeEventListener("abort", onShutdown));
    const stopGuard = guardStream(ctx, this.options.guard.principal, {
      stillAllowed: this.options.guard.stillAllowed,
      onRefused: (refusal) => {
        this.write(sseFrame("revoked", { code: refusal.code, message: refusal.message }));
        this.close();
      },
      onError: (error) => this.fail(error),
    });
    this.onClose(stopGuard);
    const keepalive = setInterval(() => {
      if (!this.#wrote && this.queued <= 0) this.write(PING);
      this.#wrote = false;
    }, this.options.keepaliveMs ?? KEEPALIVE_MS);
    (keepalive as { unref?: () => void }).unref?.();
    this.onClose(() => clearInterval(keepalive));
  }

  #shutDown(): void {
    this.write(SHUTDOWN);
    this.close();
  }

  /** Runs a producer step; one that throws ends the stream (EventSource reconnects) and stops what feeds it. */
  async #failing(step: () => Promise<void> | void): Promise<void> {
    try {
      await step();
    } catch (error) {
      this.#end();
      throw error;
    }
  }

  #end(): boolean {
    if (!this.#open) return false;
    this.#open = false;
    for (const cleanup of this.#cleanups.splice(0)) cleanup();
    return true;
  }
}
