// GET /v1/builds/{build_id}/logs/stream?token= (stream token; docs/runners.md "Live logs"): Server-Sent Events.
//   retry: 3000                                  first, the reconnect delay
//   event: status  data: {"status", "exit_code"}  at once and on every change (no id)
//   id: <seq>  event: log  data: {"seq","step","stream","ts","text"}   every line, once
//   event: truncated  data: {"cut_lines","cut_bytes","text"}           where the cap cut lines
//   : ping                                       every 15 s, so proxies keep the connection
//   event: end  data: {"status","exit_code","last_seq"}                then the stream closes
// Ids are the lines' build-wide seq, so a reconnect with Last-Event-ID (or ?last_event_id=)
// resumes with no gap and no duplicate; reconnecting to a finished build at its end answers 204
// (EventSource then stops). The stream is pulled: a slow client only lags, nothing is buffered
// for it beyond one page, and no line is dropped (docs/runners.md "Live logs").
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { IdParam } from "../../lib/schemas/ci.ts";
import { findBuild } from "../../lib/db/builds.ts";
import { cutNotice, readLogPage, statsOf } from "../../lib/db/build-logs.ts";
import { waitOnHub } from "../../lib/log-hub.ts";
import { isFinished } from "../../lib/builds/state-machine.ts";
import { one } from "../../lib/db/client.ts";

const PAGE = 500;
const KEEPALIVE_MS = 15_000;
/** Waiting readers re-read the database at least this often: the latency for lines appended through another process. */
const RECHECK_MS = 1000;

export const endpoint = defineEndpoint({
  operationId: "stream_build_logs",
  summary: "Live build log (Server-Sent Events)",
  description: "Authenticated by ?token= from POST /v1/builds/{build_id}/stream-token. Resume with Last-Event-ID or ?last_event_id=.",
  tag: "logs",
  params: z.object({ build_id: IdParam }),
  query: z.object({ token: z.string().max(200), last_event_id: z.string().regex(/^\d{1,15}$/).optional() }),
  produces: ["text/event-stream"],
  errors: ["not_found", "forbidden", "invalid_token"],
  async handle({ params, query }, ctx) {
    const build = await findBuild(ctx.db, params.build_id);
    if (!build) fail("not_found", "No build with that id.");
    const header = ctx.request.headers.get("last-event-id");
    let cursor = Number(/^\d{1,15}$/.test(header ?? "") ? header : (query.last_event_id ?? "0"));
    const initialStats = await statsOf(ctx.db, build.id);
    if (isFinished(build.status) && cursor >= initialStats.last_seq && cursor > 0 && !(await hasRunningJob(ctx.db, build.id))) {
      return new Response(null, { status: 204 });
    }
    // SSE connections stay open until the build ends: lift Bun's idle timeout for this one.
    ctx.setIdleTimeout(0);
    const subscribers = ctx.metrics.gauge("roost_sse_subscribers", "Open log streams in this process.");
    const encoder = new TextEncoder();
    let lastStatus = "";
    let lastPing = Date.now();
    let markerSent = initialStats.head_last_seq === null || cursor > (initialStats.head_last_seq ?? 0);
    let open = true;
    const change = (n: number) => subscribers.set({}, (subscribers.values.get("") ?? 0) + n);
    change(1);
    const close = (controller: ReadableStreamDefaultController<Uint8Array>) => {
      if (!open) return;
      open = false;
      change(-1);
      controller.close();
    };

    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode("retry: 3000\n\n"));
      },
      async pull(controller) {
        // Produce at least one chunk per pull; pull runs only when the client has taken the last one.
        for (;;) {
          if (ctx.shutdown.aborted) {
            controller.enqueue(encoder.encode('retry: 1000\nevent: shutdown\ndata: {"reconnect":true}\n\n'));
            return close(controller);
          }
          const current = (await findBuild(ctx.db, build.id))!;
          let out = "";
          if (current.status !== lastStatus) {
            lastStatus = current.status;
            out += `event: status\ndata: ${JSON.stringify({ status: current.status, exit_code: current.exit_code })}\n\n`;
          }
          const page = await readLogPage(ctx.db, build.id, cursor, PAGE);
          if (page.length) {
            const stats = markerSent ? null : await statsOf(ctx.db, build.id);
            for (const entry of page) {
              if (stats && !markerSent && stats.head_last_seq !== null && stats.cut_lines > 0 && entry.seq > stats.head_last_seq) {
                markerSent = true;
                out += `event: truncated\ndata: ${JSON.stringify({ cut_lines: stats.cut_lines, cut_bytes: stats.cut_bytes, text: cutNotice(stats) })}\n\n`;
              }
              out += `id: ${entry.seq}\nevent: log\ndata: ${JSON.stringify({ seq: entry.seq, step: entry.step, stream: entry.stream, ts: entry.ts, text: entry.text })}\n\n`;
              cursor = entry.seq;
            }
          }
          if (out) {
            controller.enqueue(encoder.encode(out));
            return;
          }
          // Nothing new: finished (and no runner still sending)? Then the final event.
          if (isFinished(current.status) && !(await hasRunningJob(ctx.db, build.id))) {
            const stats = await statsOf(ctx.db, build.id);
            if (cursor >= stats.last_seq) {
              controller.enqueue(encoder.encode(`event: end\ndata: ${JSON.stringify({ status: current.status, exit_code: current.exit_code, last_seq: stats.last_seq })}\n\n`));
              return close(controller);
            }
          }
          if (Date.now() - lastPing >= KEEPALIVE_MS) {
            lastPing = Date.now();
            controller.enqueue(encoder.encode(": ping\n\n"));
            return;
          }
          await waitOnHub(ctx.logHubs, build.id, cursor, RECHECK_MS);
        }
      },
      cancel() {
        if (open) {
          open = false;
          change(-1);
        }
      },
    });
    return new Response(body, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-store",
        "x-accel-buffering": "no",
        "referrer-policy": "no-referrer",
        connection: "keep-alive",
      },
    });
  },
});

async function hasRunningJob(db: Parameters<typeof one>[0], buildId: string): Promise<boolean> {
  return (await one(db, "SELECT 1 FROM jobs WHERE build_id = ? AND status = 'running'", [buildId])) !== null;
}
