// The live log stream of one build, as Server-Sent Events (the wire format is documented in
// handlers/logs/stream.ts, the route that opens it). Live lines come from the build's log hub
// (lib/log-hub.ts), encoded once for all streams; the database is read only to catch up (a late
// joiner, an old Last-Event-ID, a client that fell more than BEHIND_BYTES behind), a page at a
// time as the client reads, so a slow client only lags and no line is dropped or sent twice
// (docs/runners.md "Live logs"). An idle stream makes no query of its own but the check, every
// RECHECK_MS, that the credential behind its stream token still works and its user still sees the
// project (lib/auth/stream-guard.ts); when not, it ends with `event: revoked`.
import type { RequestContext } from "../context.ts";
import type { Build } from "../db/builds.ts";
import { cutNotice, readLogPage, statsOf, type LogStats } from "../db/build-logs.ts";
import { encodeAfter, logFrame, statusFrame, statusRank, type HubPush, type HubStatus, type HubSubscriber } from "../log-hub.ts";
import { logWatcher } from "./live.ts";
import { isFinished } from "../builds/state-machine.ts";
import type { Principal } from "../auth/principal.ts";
import { projectRoleOf } from "../auth/project-access.ts";
import { guardStream, revokedFrame } from "../auth/stream-guard.ts";

const PAGE = 500;
const KEEPALIVE_MS = 15_000;
/** A client with more than this queued and not taken gets no more pushes; it catches up when it drains. */
const BEHIND_BYTES = 1024 * 1024;
const encoder = new TextEncoder();

/**
 * Opens the stream of `build` after `cursor` (the last seq the client has) for `reader`, the
 * principal behind the stream token. `initialStats` is the log as read when the request came in;
 * `running` whether a runner may still send lines.
 */
export function openLogStream(ctx: RequestContext, build: Build, reader: Principal, cursor: number, initialStats: LogStats, running: boolean): Response {
  // SSE connections stay open until the build ends: lift Bun's idle timeout for this one.
  ctx.setIdleTimeout(0);
  const subscribers = ctx.metrics.gauge("roost_sse_subscribers", "Open log streams in this process.");
  const catchUps = ctx.metrics.counter("roost_sse_catchup_reads_total", "Log pages read from the database by streams catching up (joining late or fallen behind).");
  const change = (n: number) => subscribers.set({}, (subscribers.values.get("") ?? 0) + n);
  const buildId = build.id;
  const hub = ctx.logHubs.get(buildId);
  const watcher = logWatcher(ctx);
  // What is known of the build; moves forward only (statusRank), from this read and the hub's pushes.
  let known: HubStatus = { status: build.status, exit_code: build.exit_code, ended: isFinished(build.status) && !running, last_seq: initialStats.last_seq };
  let sentStatus = "";
  let markerSent = initialStats.head_last_seq === null || cursor > (initialStats.head_last_seq ?? 0);
  // "catchup": reading from the hub's window or the database, pushes buffered in `pending`;
  // "live": pushes go straight to the client.
  let mode: "catchup" | "live" = "catchup";
  let pending: Extract<HubPush, { kind: "log" }>[] = [];
  let pendingBytes = 0;
  /** Set when the buffered pushes had a gap the window did not fill: the next step reads the database. */
  let readDatabase = false;
  /** The cursor at which an ended build's missing last lines were last looked for in the database. */
  let lookedAt = -1;
  let open = true;
  let wake: (() => void) | null = null;
  let wroteWhileWaiting = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let unsubscribe: (() => void) | null = null;
  let release: (() => void) | null = null;
  let stopGuard: (() => void) | null = null;
  const onShutdown = () => wake?.();

  const finish = () => {
    if (!open) return false;
    open = false;
    change(-1);
    unsubscribe?.();
    release?.();
    stopGuard?.();
    ctx.shutdown.removeEventListener("abort", onShutdown);
    wake?.();
    return true;
  };
  const send = (chunk: Uint8Array | string) => {
    controller.enqueue(typeof chunk === "string" ? encoder.encode(chunk) : chunk);
    wroteWhileWaiting = true;
  };
  /** Bytes the client has not taken yet (the stream's size is bytes and its high-water mark 1). */
  const queued = () => 1 - (controller.desiredSize ?? 1);
  const statusText = () => {
    const s = JSON.stringify({ status: known.status, exit_code: known.exit_code });
    if (s === sentStatus) return "";
    sentStatus = s;
    return statusFrame(known);
  };
  /** The final event once the build ended and every line went out; then the stream closes. */
  const endIfDone = (): boolean => {
    if (!known.ended || cursor < known.last_seq || mode !== "live") return false;
    send(statusText() + `event: end\ndata: ${JSON.stringify({ status: known.status, exit_code: known.exit_code, last_seq: known.last_seq })}\n\n`);
    if (finish()) controller.close();
    return true;
  };
  const learn = (s: HubStatus) => {
    if (statusRank(s) >= statusRank(known)) known = { ...s, last_seq: Math.max(s.last_seq, known.last_seq) };
  };
  /**
   * The build ended with lines this live stream was never pushed (not expected: the hub gets
   * lines before the status that ends them): look for them in the database, once per cursor.
   */
  const missingLast = (): boolean => {
    if (mode !== "live" || !known.ended || cursor >= known.last_seq || lookedAt === cursor) return false;
    lookedAt = cursor;
    mode = "catchup";
    readDatabase = true;
    pending = [];
    pendingBytes = 0;
    return true;
  };
  /**
   * The buffered batches after the cursor; false at a gap (read again). `acrossGaps` when the
   * database has nothing after the cursor: the missing lines are not there to wait for.
   */
  const flushPending = (acrossGaps: boolean): Uint8Array[] | false => {
    const out: Uint8Array[] = [];
    for (const batch of pending) {
      if (batch.last <= cursor) continue;
      if (batch.first > cursor + 1 && !acrossGaps) return false;
      out.push(batch.first > cursor ? batch.bytes : encodeAfter(batch.entries, cursor));
      cursor = batch.last;
    }
    return out;
  };

  const subscriber: HubSubscriber = {
    push(frame) {
      if (!open) return;
      if (frame.kind === "status") {
        learn(frame.status);
        if (mode === "live") {
          const s = statusText();
          if (s) send(s);
          if (endIfDone() || !missingLast()) return;
        }
        wake?.();
        return;
      }
      if (frame.last <= cursor) return;
      if (mode === "catchup") {
        if (pendingBytes + frame.bytes.byteLength <= BEHIND_BYTES) {
          pending.push(frame);
          pendingBytes += frame.bytes.byteLength;
        }
        // Past the cap the buffer is incomplete; the gap check on flushing sends the reader back to the database.
        wake?.();
        return;
      }
      if (frame.first > cursor + 1 || queued() > BEHIND_BYTES) {
        // A gap (lines this hub never carried) or a client not draining: stop pushing to it,
        // catch up from the window or the database when it reads again.
        mode = "catchup";
        pending = [];
        pendingBytes = 0;
        wake?.();
        return;
      }
      send(frame.first > cursor ? frame.bytes : encodeAfter(frame.entries, cursor));
      cursor = frame.last;
      endIfDone();
    },
  };

  change(1);
  const body = new ReadableStream<Uint8Array>(
    {
      async start(c) {
        controller = c;
        c.enqueue(encoder.encode("retry: 3000\n\n"));
        // Subscribe first, buffering pushes, then catch up: no line falls between the two.
        ctx.shutdown.addEventListener("abort", onShutdown);
        stopGuard = guardStream(ctx, reader, {
          async stillAllowed(principal) {
            if ((await projectRoleOf(ctx.db, principal, build.project_id)) !== null) return null;
            return { code: "forbidden", message: "The user this stream token was issued to can no longer see this build." };
          },
          onRefused(refusal) {
            if (!open) return;
            send(revokedFrame(refusal));
            if (finish()) c.close();
          },
          onError(error) {
            if (finish()) c.error(error);
          },
        });
        release = watcher.watch(buildId);
        unsubscribe = await hub.subscribe(subscriber);
        learn((await hub.setStatus(known)) ?? known);
        if (!open) unsubscribe();
      },
      async pull(c) {
        try {
          await produce(c);
        } catch (error) {
          // A failed read ends this stream (EventSource reconnects with Last-Event-ID); stop pushes to it.
          finish();
          throw error;
        }
      },
      cancel() {
        finish();
      },
    },
    { highWaterMark: 1, size: (chunk) => chunk?.byteLength ?? 0 },
  );

  /** One pull: runs when the client has taken everything queued; produces at least one chunk or waits. */
  async function produce(c: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    while (open) {
      if (ctx.shutdown.aborted) {
        c.enqueue(encoder.encode('retry: 1000\nevent: shutdown\ndata: {"reconnect":true}\n\n'));
        if (finish()) c.close();
        return;
      }
      if (queued() > 0) return; // pushes filled the queue meanwhile; pull runs again when it drains
      let out: string | Uint8Array = statusText();
      if (mode === "catchup") {
        const chunk = await catchUp();
        if (!open) return;
        if (typeof out === "string" && out && chunk.byteLength) out = concatBytes(encoder.encode(out), chunk);
        else if (chunk.byteLength) out = chunk;
      }
      if (typeof out === "string" ? out.length > 0 : out.byteLength > 0) {
        send(out);
        endIfDone();
        return;
      }
      if (endIfDone()) return;
      if (mode === "catchup" || missingLast()) continue;
      // Live and idle: wait for a gap, a status, the shutdown or the keepalive.
      wroteWhileWaiting = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, KEEPALIVE_MS);
      });
      wake = null;
      clearTimeout(timer);
      if (!open) return;
      if (mode === "live" && !ctx.shutdown.aborted && !wroteWhileWaiting && queued() <= 0) {
        send(": ping\n\n");
        return;
      }
      if (wroteWhileWaiting) return;
  }
  }

  /**
   * One step of catching up: frames after the cursor from the hub's window when it reaches back
   * that far, else one page from the database; then the buffered pushes. Turns live when nothing
   * is left to read.
   */
  async function catchUp(): Promise<Uint8Array> {
    const parts: Uint8Array[] = [];
    // Pushes arriving from here on are buffered; older buffered ones are re-read below.
    pending = [];
    pendingBytes = 0;
    // The window serves only when it reaches back to the cursor and up to what the database held
    // at open (a hub that has not seen lines appended elsewhere, or none yet, does not).
    let window = readDatabase ? null : await hub.since(cursor);
    if (window && Math.max(window.last, cursor) < initialStats.last_seq) window = null;
    let databaseDone = false;
    if (window) {
      if (window.last > cursor) {
        parts.push(window.bytes);
        cursor = window.last;
      }
    } else {
      catchUps.inc({});
      const page = await readLogPage(ctx.db, buildId, cursor, PAGE);
      const stats = page.length && !markerSent ? await statsOf(ctx.db, buildId) : null;
      let text = "";
      for (const entry of page) {
        if (stats && !markerSent && stats.head_last_seq !== null && stats.cut_lines > 0 && entry.seq > stats.head_last_seq) {
          markerSent = true;
          text += `event: truncated\ndata: ${JSON.stringify({ cut_lines: stats.cut_lines, cut_bytes: stats.cut_bytes, text: cutNotice(stats) })}\n\n`;
        }
        text += logFrame(entry);
        cursor = entry.seq;
      }
      if (text) parts.push(encoder.encode(text));
      if (page.length === PAGE || cursor < initialStats.last_seq) return concatBytes(...parts);
      databaseDone = page.length === 0;
    }
    const flushed = flushPending(databaseDone);
    readDatabase = flushed === false;
    if (flushed !== false) {
      parts.push(...flushed);
      mode = "live";
    }
    pending = [];
    pendingBytes = 0;
    return concatBytes(...parts);
  }

  return new Response(body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-store",
      "x-accel-buffering": "no",
      "referrer-policy": "no-referrer",
      connection: "keep-alive",
    },
  });
}

function concatBytes(...parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
