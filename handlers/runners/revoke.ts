// DELETE /v1/runners/{runner_id} (admin): revokes the runner. Its token stops working at once;
// builds it was running fail (runner revoked) as soon as their lease lapses.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { findRunner, revokeRunner } from "../../lib/runners/store.ts";

export const endpoint = defineEndpoint({
  operationId: "revoke_runner",
  summary: "Revoke a runner",
  params: z.object({ runner_id: IdParam }),
  response: z.object({ revoked: z.boolean() }),
  errors: ["not_found"],
  async handle({ params }, ctx) {
    const runner = await findRunner(ctx.db, params.runner_id);
    if (!runner) fail("not_found", "No runner with that id.");
    await revokeRunner(ctx.db, runner.id, ctx.clock.now());
    return { revoked: true };
  },
});
