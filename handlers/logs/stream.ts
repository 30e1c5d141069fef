// GET /v1/builds/{build_id}/logs/stream?token= (stream token; docs/runners.md "Live logs"): Server-Sent Events.
//   retry: 3000                                  first, the reconnect delay
//   event: status  data: {"status", "exit_code"}  at once and on every change (no id)
//   id: <seq>  event: log  data: {"seq","step","stream","ts","text"}   every line, once
//   event: truncated  data: {"cut_lines","cut_bytes","text"}           where the cap cut lines
//   : ping                                       every 15 s in which nothing else was sent, so proxies keep the connection
//   event: end  data: {"status","exit_code","last_seq"}                then the stream closes
//   event: revoked  data: {"code","message"}     the credential behind the token stopped working or
//                                                its user lost the project (checked every 2 s); then it closes
// Ids are the lines' build-wide seq, so a reconnect with Last-Event-ID (or ?last_event_id=)
// resumes with no gap and no duplicate; reconnecting to a finished build at its end answers 204
// (EventSource then stops). The stream itself (hub pushes, catching up, keepalives) is
// lib/live/log-stream.ts.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { StreamContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { findBuild } from "../../lib/builds/store.ts";
import { statsOf } from "../../lib/logs/store.ts";
import { openLogStream } from "../../lib/live/log-stream.ts";
import { isFinished } from "../../lib/builds/state-machine.ts";
import { hasRunningJob } from "../../lib/runners/jobs.ts";

export const endpoint = defineEndpoint({
  operationId: "stream_build_logs",
  summary: "Live build log (Server-Sent Events)",
  description:
    "Authenticated by ?token= from POST /v1/builds/{build_id}/stream-token. Resume with Last-Event-ID or ?last_event_id=. Ends with event: revoked once the credential behind the token stops working or its user loses the project.",
  params: z.object({ build_id: IdParam }),
  query: z.object({
    token: z.string().max(200),
    last_event_id: z
      .string()
      .regex(/^\d{1,15}$/)
      .optional(),
  }),
  produces: ["text/event-stream"],
  errors: ["not_found"],
  async handle({ params, query }, ctx: StreamContext) {
    const build = await findBuild(ctx.db, params.build_id);
    if (!build) fail("not_found", "No build with that id.");
    const header = ctx.request.headers.get("last-event-id");
    const cursor = Number(/^\d{1,15}$/.test(header ?? "") ? header : (query.last_event_id ?? "0"));
    const initialStats = await statsOf(ctx.db, build.id);
    // A finished build may still have a runner sending its last lines (a canceled build's job).
    const running = isFinished(build.status) ? await hasRunningJob(ctx.db, build.id) : true;
    if (isFinished(build.status) && cursor >= initialStats.last_seq && cursor > 0 && !running) {
      return new Response(null, { status: 204 });
    }
    return openLogStream(ctx, build, ctx.principal, cursor, initialStats, running);
  },
});
