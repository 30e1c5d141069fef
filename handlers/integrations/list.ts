// GET /v1/integrations (maintainer): the connected hosts, without credentials.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { IntegrationResource } from "../../lib/schemas/ci.ts";
import { listIntegrations, toPublicIntegration } from "../../lib/db/integrations.ts";

export const endpoint = defineEndpoint({
  operationId: "list_integrations",
  summary: "List source integrations",
  tag: "integrations",
  response: z.object({ integrations: z.array(IntegrationResource) }),
  errors: ["forbidden", "invalid_session", "invalid_token"],
  async handle(_input, ctx) {
    return { integrations: (await listIntegrations(ctx.db)).map(toPublicIntegration) };
  },
});
