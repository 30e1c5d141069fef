// GET /v1/webhook-deliveries/{delivery_id}: one delivery with its decisions and, within the
// retention period, its body. Project maintainers see their project's deliveries; admins all.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { IdParam } from "../../lib/schemas/ci.ts";
import { roleAtLeast } from "../../lib/auth/roles.ts";
import { requireProjectRole } from "../../lib/auth/project-access.ts";
import { findDelivery, toPublicDelivery } from "../../lib/webhooks/deliveries.ts";
import { DeliveryResource } from "../../lib/webhooks/wire.ts";

export const endpoint = defineEndpoint({
  operationId: "get_webhook_delivery",
  summary: "One webhook delivery, with its body while retained",
  tag: "webhooks",
  params: z.object({ delivery_id: IdParam }),
  response: z.object({ delivery: DeliveryResource.extend({ body: z.string().nullable().describe("the raw body, kept 7 days") }) }),
  errors: ["not_found", "forbidden", "invalid_session", "invalid_token"],
  async handle({ params }, ctx) {
    const delivery = await findDelivery(ctx.db, params.delivery_id);
    if (!delivery) fail("not_found", "No delivery with that id.");
    if (!roleAtLeast(ctx.principal!.role, "admin")) {
      if (!delivery.project_id) fail("not_found", "No delivery with that id.");
      await requireProjectRole(ctx, delivery.project_id, "maintainer");
    }
    return { delivery: toPublicDelivery(delivery, true) };
  },
});
