// POST /v1/runners/{runner_id}/connect (runner token): the runner says what it is and what it
// can build; Roost answers the intervals it expects (the server sets them, as Buildkite does).
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { IdParam } from "../../lib/schemas/ci.ts";
import { LOG_REQUEST_LIMIT, RunnerLabel } from "../../lib/runners/wire.ts";
import { recordConnect } from "../../lib/db/runners.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_connect",
  summary: "Runner: connect and advertise labels and capabilities",
  tag: "runner-protocol",
  params: z.object({ runner_id: IdParam }),
  body: z
    .object({
      labels: z.array(RunnerLabel).max(20).default([]),
      capabilities: z
        .object({
          os: z.enum(["linux", "macos", "windows"]),
          arch: z.string().max(20),
          flutter_versions: z.array(z.string().max(40)).max(50).default([]),
          xcode: z.string().max(40).nullable().default(null),
        })
        .strict(),
      version: z.string().max(40).default(""),
    })
    .strict(),
  response: z.object({ heartbeat_seconds: z.number().int(), lease_seconds: z.number().int(), max_log_request_bytes: z.number().int() }),
  errors: ["invalid_token", "forbidden"],
  async handle({ body }, ctx) {
    await recordConnect(ctx.db, ctx.runner!.id, body, ctx.clock.now());
    return { heartbeat_seconds: ctx.config.runners.heartbeatSeconds, lease_seconds: ctx.config.runners.leaseSeconds, max_log_request_bytes: LOG_REQUEST_LIMIT };
  },
});
