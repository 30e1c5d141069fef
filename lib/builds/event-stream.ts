// One client's stream of build changes (GET /v1/events, wire format in handlers/events/stream.ts).
// The changes come from this process's build feed (lib/builds/feed.ts), encoded once for all
// streams; each stream only decides whether its caller may see the build's project (their
// project role, re-read at most every ROLE_TTL_SECONDS per project) and queues the frame. Nothing
// is replayed: a client that (re)connects reads the lists it shows once, then follows the stream.
import type { RequestContext } from "../context.ts";
import type { Principal } from "../auth/principal.ts";
import type { ProjectRole } from "../db/projects.ts";
import { projectRoleOf } from "../auth/project-access.ts";
import { buildFeed, type BuildChange } from "./feed.ts";

const KEEPALIVE_MS = 15_000;
/** How long a stream trusts the caller's role on a project before reading it again. */
const ROLE_TTL_SECONDS = 5;
/**
 * A client with more than this queued and not taken is dropped: its connection ends and
 * EventSource reconnects, then reloads what it shows. The daemon never holds more per stream.
 */
export const MAX_QUEUED_BYTES = 256 * 1024;
const encoder = new TextEncoder();

/** Opens the event stream of `principal`. */
export function openBuildEventStream(ctx: RequestContext, principal: Principal): Response {
  // The stream stays open as long as the client keeps it: lift Bun's idle timeout for this one.
  ctx.setIdleTimeout(0);
  const streams = ctx.metrics.gauge("roost_event_streams", "Open GET /v1/events streams in this process.");
  const change = (n: number) => streams.set({}, (streams.values.get("") ?? 0) + n);
  const feed = buildFeed(ctx);
  const roles = new Map<string, { role: ProjectRole | null; at: number }>();
  let open = true;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let unsubscribe: (() => void) | null = null;
  let keepalive: ReturnType<typeof setInterval> | null = null;
  /** Deliveries in order: a role read for one build never lets a later frame overtake it. */
  let chain: Promise<void> = Promise.resolve();

  const finish = () => {
    if (!open) return false;
    open = false;
    change(-1);
    unsubscribe?.();
    if (keepalive) clearInterval(keepalive);
    ctx.shutdown.removeEventListener("abort", onShutdown);
    return true;
  };
  /** Queues text, or drops a client that does not read (it reconnects). */
  const send = (text: string) => {
    if (!open) return;
    if (1 - (controller.desiredSize ?? 1) > MAX_QUEUED_BYTES) {
      finish();
      controller.error(new Error("event stream client too slow"));
      return;
    }
    controller.enqueue(encoder.encode(text));
  };
  const onShutdown = () => {
    if (!open) return;
    controller.enqueue(encoder.encode('retry: 1000\nevent: shutdown\ndata: {"reconnect":true}\n\n'));
    if (finish()) controller.close();
  };
  const maySee = async (projectId: string): Promise<boolean> => {
    const now = ctx.clock.now();
    let cached = roles.get(projectId);
    if (!cached || now - cached.at >= ROLE_TTL_SECONDS) {
      cached = { role: await projectRoleOf(ctx.db, principal, projectId), at: now };
      roles.set(projectId, cached);
    }
    return cached.role !== null;
  };
  const deliver = (c: BuildChange) => {
    chain = chain.then(async () => {
      if (!open) return;
      try {
        if (await maySee(c.project_id)) send(c.frame);
      } catch {
        // A failed role read skips this change; the client reloads when it reconnects.
      }
    });
  };

  change(1);
  const body = new ReadableStream<Uint8Array>(
    {
      async start(c) {
        controller = c;
        c.enqueue(encoder.encode("retry: 3000\n\n"));
        if (ctx.shutdown.aborted) {
          onShutdown();
          return;
        }
        ctx.shutdown.addEventListener("abort", onShutdown);
        const subscription = feed.subscribe(deliver);
        unsubscribe = subscription.unsubscribe;
        await subscription.ready;
        if (!open) return;
        // From here on every change reaches this stream: the client reads its lists now.
        c.enqueue(encoder.encode("event: ready\ndata: {}\n\n"));
        keepalive = setInterval(() => send(": ping\n\n"), KEEPALIVE_MS);
        (keepalive as { unref?: () => void }).unref?.();
      },
      cancel() {
        finish();
      },
    },
    { highWaterMark: 1, size: (chunk) => chunk?.byteLength ?? 0 },
  );

  return new Response(body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-store",
      "x-accel-buffering": "no",
      connection: "keep-alive",
    },
  });
}
