// GET /v1/integrations (maintainer): the connected hosts, without credentials; why a sync failed
// only for admins.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { IntegrationResource } from "../../lib/integrations/wire.ts";
import { listIntegrations } from "../../lib/integrations/store.ts";
import { integrationView } from "../../lib/integrations/index.ts";
import { roleAtLeast } from "../../lib/auth/roles.ts";

export const endpoint = defineEndpoint({
  operationId: "list_integrations",
  summary: "List source integrations",
  response: z.object({ integrations: z.array(IntegrationResource) }),
  async handle(_input, ctx: UserContext) {
    const isAdmin = roleAtLeast(ctx.principal.role, "admin");
    return { integrations: (await listIntegrations(ctx.db)).map((i) => integrationView(i, isAdmin)) };
  },
});
