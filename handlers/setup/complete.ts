// POST /v1/setup/complete: the step that makes the instance ready (docs/api.md
// "Setup"). Needs an owner; after it, setup tokens stop working and setup endpoints answer 409.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { fail } from "../../lib/http/errors.ts";
import { inTransaction } from "../../lib/db/client.ts";
import { getInstance, markReady, runtimeMode } from "../../lib/setup/instance.ts";
import { countActiveOwners } from "../../lib/auth/users.ts";
import { deleteSetupTokens } from "../../lib/auth/one-time-credentials.ts";
import { removeSetupTokenFile } from "../../lib/setup/token-file.ts";
import { remoteAuthReadiness } from "../../lib/auth/remote-auth-readiness.ts";

export const endpoint = defineEndpoint({
  operationId: "setup_complete",
  summary: "Finish first-run setup and make the instance ready",
  response: z.object({ state: z.literal("ready"), runtime_mode: z.enum(["local", "remote"]), remote_auth_mode: z.enum(["oidc", "trusted_proxy"]).nullable() }),
  errors: ["owner_required", "remote_auth_not_configured"],
  async handle(_input, ctx) {
    const instance = await inTransaction(ctx.db, async (tx) => {
      const current = await getInstance(tx);
      if ((await countActiveOwners(tx)) === 0) fail("owner_required", "Create the owner first with POST /v1/setup/owner.");
      const missing = await remoteAuthReadiness(tx, current);
      if (missing) fail("remote_auth_not_configured", missing);
      if (!(await markReady(tx, ctx.clock.now()))) fail("setup_already_complete");
      await deleteSetupTokens(tx);
      return current;
    });
    await removeSetupTokenFile(ctx.config.dataDir);
    ctx.log.info("setup complete", { runtime_mode: runtimeMode(instance), remote_auth_mode: instance.remote_auth_mode });
    return { state: "ready" as const, runtime_mode: runtimeMode(instance), remote_auth_mode: instance.remote_auth_mode };
  },
});
