// DELETE /v1/integrations/{integration_id} (admin): disconnects a host, drops its catalogue and
// resolves the incidents about them; refused while a project still builds one of its repositories.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { findIntegration } from "../../lib/integrations/store.ts";
import { removeIntegration } from "../../lib/integrations/index.ts";
import { countProjectsUsingIntegration } from "../../lib/projects/store.ts";

export const endpoint = defineEndpoint({
  operationId: "delete_integration",
  summary: "Disconnect a source integration",
  params: z.object({ integration_id: IdParam }),
  response: z.object({ deleted: z.boolean() }),
  errors: ["not_found", "integration_in_use"],
  async handle({ params }, ctx) {
    const integration = await findIntegration(ctx.db, params.integration_id);
    if (!integration) fail("not_found", "No integration with that id.");
    const used = await countProjectsUsingIntegration(ctx.db, integration.id);
    if (used > 0) fail("integration_in_use", `${used} project(s) build repositories of this integration; delete them first.`);
    await removeIntegration(ctx.db, integration.id, ctx.clock.now());
    return { deleted: true };
  },
});
