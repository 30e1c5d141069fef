// POST /v1/runners (admin): registers a runner. The token (roost_rt_…) is in this answer only.
import { z } from "zod";
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { DisplayName } from "../../lib/schemas/shared.ts";
import { RunnerResource, RunnerLabel } from "../../lib/runners/wire.ts";
import { insertRunner, toPublicRunner } from "../../lib/runners/store.ts";

export const endpoint = defineEndpoint({
  operationId: "create_runner",
  summary: "Register a runner",
  body: z.object({ name: DisplayName, labels: z.array(RunnerLabel).max(20).default([]) }).strict(),
  ...created({ runner: RunnerResource, token: z.string().describe("roost_rt_…, shown only here") }),
  async handle({ body }, ctx: UserContext) {
    const { runner, token } = await insertRunner(ctx.db, { name: body.name, labels: body.labels, createdBy: ctx.principal.user.id }, ctx.clock.now());
    return { runner: toPublicRunner(runner), token };
  },
});
