// The live log stream of one build, as Server-Sent Events (the wire format is documented in
// handlers/logs/stream.ts, the route that opens it): an SseStream (sse-stream.ts: framing,
// keepalive, the credential guard, shutdown) fed by a LogFollower (log-follower.ts: the build's
// hub, catching up from its window or the database, then live), while the log feed
// (log-feed.ts) checks the build for this process. An idle stream makes no query of its own but
// the check, every RECHECK_MS, that the credential behind its stream token still works and its
// user still sees the project (lib/auth/stream-guard.ts).
import type { RequestContext } from "../http/context.ts";
import type { Build } from "../builds/store.ts";
import type { LogStats } from "../logs/store.ts";
import { isFinished } from "../builds/state-machine.ts";
import type { Principal } from "../auth/principal.ts";
import { projectRoleOf } from "../auth/project-access.ts";
import { SseStream } from "./sse-stream.ts";
import { LogFollower } from "./log-follower.ts";
import { openLogReader } from "../logs/archive.ts";

/** A client with more than this queued and not taken gets no more pushes; it catches up when it drains. */
const BEHIND_BYTES = 1024 * 1024;

/**
 * Opens the stream of `build` after `cursor` (the last seq the client has) for `reader`, the
 * principal behind the stream token. `initialStats` is the log as read when the request came in;
 * `running` whether a runner may still send lines.
 */
export function openLogStream(ctx: RequestContext, build: Build, reader: Principal, cursor: number, initialStats: LogStats, running: boolean): Response {
  const stream = new SseStream(ctx, {
    gauge: { name: "roost_sse_subscribers", help: "Open log streams in this process." },
    maxQueuedBytes: BEHIND_BYTES,
    // The token travels in the URL (?token=): no Referer may carry it on.
    headers: { "referrer-policy": "no-referrer" },
    guard: {
      principal: reader,
      async stillAllowed(principal) {
        if ((await projectRoleOf(ctx.db, principal, build.project_id)) !== null) return null;
        return { code: "forbidden", message: "The user this stream token was issued to can no longer see this build." };
      },
    },
  });
  const follower = new LogFollower(stream, {
    db: ctx.db,
    buildId: build.id,
    log: openLogReader(ctx, build.id),
    hub: ctx.live.hubs.get(build.id),
    cursor,
    initialStats,
    known: { status: build.status, exit_code: build.exit_code, ended: isFinished(build.status) && !running, last_seq: initialStats.last_seq },
    catchUps: ctx.metrics.counter("roost_sse_catchup_reads_total", "Log pages read from the database by streams catching up (joining late or fallen behind)."),
  });
  return stream.response({
    async start() {
      stream.onClose(ctx.live.logs.watch(build.id));
      await follower.join();
    },
    pull: () => follower.produce(),
  });
}
