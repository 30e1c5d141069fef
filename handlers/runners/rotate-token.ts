// POST /v1/runners/{runner_id}/token (admin): a new token; the old one stops working at once.
import { z } from "zod";
import { created, defineEndpoint } from "../../lib/http/route.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { findRunner, rotateRunnerToken } from "../../lib/runners/store.ts";

export const endpoint = defineEndpoint({
  operationId: "rotate_runner_token",
  summary: "Rotate a runner's token",
  params: z.object({ runner_id: IdParam }),
  ...created({ token: z.string() }),
  errors: ["not_found"],
  async handle({ params }, ctx) {
    const runner = await findRunner(ctx.db, params.runner_id);
    if (!runner || runner.revoked_at !== null) fail("not_found", "No active runner with that id.");
    return { token: await rotateRunnerToken(ctx.db, runner.id) };
  },
});
