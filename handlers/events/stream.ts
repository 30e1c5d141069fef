// GET /v1/events (any signed-in user; the browser's session cookie, which EventSource sends
// same-origin, or a bearer token): Server-Sent Events of build changes in the projects the caller
// may see.
//   retry: 3000                         first, the reconnect delay
//   event: ready  data: {}              once the stream follows every change: read your lists now
//   event: build  data: <build>         a build was queued or changed (status, runner, steps…),
//                                       as GET /v1/builds/{build_id} answers it
//   : ping                              every 15 s in which nothing else was sent, so proxies keep the connection
//   retry: 1000 / event: shutdown  data: {"reconnect":true}   the daemon is stopping; reconnect
//   event: revoked  data: {"code","message"}   the session or API token that opened the stream
//                                       stopped working (checked every 2 s); then it closes
// Nothing is replayed on reconnect (there are no ids): a client reloads what it shows on `ready`.
// A client that does not read is dropped and reconnects. The stream itself is
// lib/live/event-stream.ts; the changes, from this process and from others on the same
// database, lib/live/build-feed.ts.
import { defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { openBuildEventStream } from "../../lib/live/event-stream.ts";

export const endpoint = defineEndpoint({
  operationId: "stream_events",
  summary: "Build changes of the caller's projects (Server-Sent Events)",
  description:
    "event: build for every build queued or changed in a project the caller may see; event: ready once following; : ping every 15 s; event: revoked, then the end, once the credential that opened it stops working.",
  produces: ["text/event-stream"],
  async handle(_input, ctx: UserContext) {
    return openBuildEventStream(ctx, ctx.principal);
  },
});
