// GET /v1/webhook-deliveries (admin): every delivery, including those rejected before any project
// could be known (bad signatures, unknown repositories).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { Pagination } from "../../lib/schemas/shared.ts";
import { listDeliveries, toPublicDelivery } from "../../lib/webhooks/deliveries.ts";
import { DeliveryResource } from "../../lib/webhooks/wire.ts";

export const endpoint = defineEndpoint({
  operationId: "list_webhook_deliveries",
  summary: "All webhook deliveries",
  query: z.object({ result: z.enum(["built", "ignored", "duplicate", "rejected", "failed"]).optional(), ...Pagination }),
  response: z.object({ deliveries: z.array(DeliveryResource), total: z.number().int() }),
  async handle({ query }, ctx) {
    const page = await listDeliveries(ctx.db, { result: query.result, limit: query.limit, offset: query.offset });
    return { deliveries: page.deliveries.map((d) => toPublicDelivery(d, false)), total: page.total };
  },
});
