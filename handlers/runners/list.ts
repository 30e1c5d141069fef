// GET /v1/runners (admin).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { RunnerResource } from "../../lib/runners/wire.ts";
import { listRunners, toPublicRunner } from "../../lib/runners/store.ts";

export const endpoint = defineEndpoint({
  operationId: "list_runners",
  summary: "List runners",
  response: z.object({ runners: z.array(RunnerResource) }),
  async handle(_input, ctx) {
    return { runners: (await listRunners(ctx.db)).map(toPublicRunner) };
  },
});
