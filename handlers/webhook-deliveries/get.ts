// GET /v1/webhook-deliveries/{delivery_id}: one delivery with its decisions and, within the
// retention period, its body. Project maintainers see their project's deliveries; admins all,
// including those that matched no project (the route's rule).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { readDeliveryBody, toPublicDelivery } from "../../lib/webhooks/deliveries.ts";
import { DeliveryResource } from "../../lib/webhooks/wire.ts";

export const endpoint = defineEndpoint({
  operationId: "get_webhook_delivery",
  summary: "One webhook delivery, with its body while retained",
  response: z.object({ delivery: DeliveryResource.extend({ body: z.string().nullable().describe("the raw body, kept 7 days") }) }),
  async handle(_input, ctx: ProjectContext<"delivery_id">) {
    // The body only now, authorized: the route's rule read the delivery's columns alone.
    return { delivery: toPublicDelivery({ ...ctx.delivery, body: await readDeliveryBody(ctx.db, ctx.delivery.id) }, true) };
  },
});
