// One client's stream of build changes (GET /v1/events, wire format in handlers/events/stream.ts).
// The changes come from this process's build feed (lib/builds/feed.ts), encoded once for all
// streams; each stream only decides whether its caller may see the build's project (their
// project role, read once per project between two checks of the credential) and queues the frame.
// Every RECHECK_MS the stream asks again whether the session or API token that opened it still
// works and ends when it does not (lib/auth/stream-guard.ts). Nothing is replayed: a client that
// (re)connects reads the lists it shows once, then follows the stream.
import type { RequestContext } from "../context.ts";
import type { Principal } from "../auth/principal.ts";
import type { ProjectRole } from "../db/projects.ts";
import { projectRoleOf } from "../auth/project-access.ts";
import { guardStream, revokedFrame } from "../auth/stream-guard.ts";
import { buildFeed, type BuildChange } from "./feed.ts";

const KEEPALIVE_MS = 15_000;
/**
 * A client with more than this queued and not taken is dropped: its connection ends and
 * EventSource reconnects, then reloads what it shows. The daemon never holds more per stream.
 */
export const MAX_QUEUED_BYTES = 256 * 1024;
const encoder = new TextEncoder();

/** Opens the event stream of `opened`, the principal the request was authenticated as. */
export function openBuildEventStream(ctx: RequestContext, opened: Principal): Response {
  // The stream stays open as long as the client keeps it: lift Bun's idle timeout for this one.
  ctx.setIdleTimeout(0);
  const streams = ctx.metrics.gauge("roost_event_streams", "Open GET /v1/events streams in this process.");
  const change = (n: number) => streams.set({}, (streams.values.get("") ?? 0) + n);
  const feed = buildFeed(ctx);
  /** The caller as of the last check of their credential, and their roles read since. */
  let principal = opened;
  let roles = new Map<string, ProjectRole | null>();
  let open = true;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let unsubscribe: (() => void) | null = null;
  let keepalive: ReturnType<typeof setInterval> | null = null;
  let stopGuard: (() => void) | null = null;
  /** Deliveries in order: a role read for one build never lets a later frame overtake it. */
  let chain: Promise<void> = Promise.resolve();

  const finish = () => {
    if (!open) return false;
    open = false;
    change(-1);
    unsubscribe?.();
    if (keepalive) clearInterval(keepalive);
    stopGuard?.();
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
    let role = roles.get(projectId);
    if (role === undefined) {
      const cache = roles;
      role = await projectRoleOf(ctx.db, principal, projectId);
      // Kept in the cache it was read for: a check that replaced that one meanwhile may postdate
      // this read, which then goes with the old cache.
      cache.set(projectId, role);
    }
    return role !== null;
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
        stopGuard = guardStream(ctx, opened, {
          async stillAllowed(now) {
            // Any signed-in user may follow the stream; which builds they see is decided per
            // project, read again after every check (a membership or role changed meanwhile).
            principal = now;
            roles = new Map();
            return null;
          },
          onRefused(refusal) {
            if (!open) return;
            c.enqueue(encoder.encode(revokedFrame(refusal)));
            if (finish()) c.close();
          },
          onError(error) {
            if (finish()) c.error(error);
          },
        });
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
