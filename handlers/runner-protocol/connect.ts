// POST /v1/runners/{runner_id}/connect (runner token): the runner says what it is and what it
// can build; Roost answers the intervals it expects (the server sets them, as Buildkite does).
// To a runner on this host, it also says which OS user the daemon runs as, so that a runner started
// as that same user refuses to run builds: build code running as the daemon's user could read the
// database, the secret key and the management socket (docs/runners.md "Build code and the daemon's host").
import { defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { ConnectAnswer, ConnectRequest, LOG_REQUEST_LIMIT } from "../../lib/runners/protocol-wire.ts";
import { recordConnect } from "../../lib/runners/store.ts";
import { isThisHostAddress } from "../../lib/net/addresses.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_connect",
  summary: "Runner: connect and advertise labels and capabilities",
  body: ConnectRequest,
  response: ConnectAnswer,
  async handle({ body }, ctx: RunnerContext) {
    await recordConnect(ctx.db, ctx.runner.id, body, ctx.clock.now());
    const uid = isThisHostAddress(ctx.peer) ? process.getuid?.() : undefined;
    return {
      heartbeat_seconds: ctx.config.runners.heartbeatSeconds,
      lease_seconds: ctx.config.runners.leaseSeconds,
      max_log_request_bytes: LOG_REQUEST_LIMIT,
      ...(uid === undefined ? {} : { daemon_uid: uid }),
    };
  },
});
