// POST /v1/integrations/{integration_id}/sync (admin): re-reads the repository catalogue from the host.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { findIntegration } from "../../lib/integrations/store.ts";
import { syncRepositories } from "../../lib/integrations/index.ts";
import { SyncWarnings } from "../../lib/integrations/wire.ts";
import { ForgeApiError } from "../../lib/forges/http.ts";
import { DecryptionError } from "../../lib/crypto/secret-box.ts";

export const endpoint = defineEndpoint({
  operationId: "sync_integration",
  summary: "Sync an integration's repository catalogue now",
  params: z.object({ integration_id: IdParam }),
  response: z.object({ repositories_synced: z.number().int(), sync_warnings: SyncWarnings }),
  errors: ["not_found", "source_host_error", "decryption_error"],
  async handle({ params }, ctx) {
    const integration = await findIntegration(ctx.db, params.integration_id);
    if (!integration) fail("not_found", "No integration with that id.");
    try {
      const { synced, warnings } = await syncRepositories(ctx, integration);
      return { repositories_synced: synced, sync_warnings: warnings };
    } catch (error) {
      if (error instanceof ForgeApiError) fail("source_host_error", error.message);
      if (error instanceof DecryptionError) fail("decryption_error");
      throw error;
    }
  },
});
