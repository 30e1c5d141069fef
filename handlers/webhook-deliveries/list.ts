// GET /v1/projects/{project_id}/webhook-deliveries (project maintainer): the delivery log of a
// project, newest first: every delivery for its repository, what it was, and why each pipeline
// did or did not build. Bodies are not listed (GET /v1/webhook-deliveries/{id}).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { Pagination } from "../../lib/schemas/shared.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { listDeliveries, toPublicDelivery } from "../../lib/webhooks/deliveries.ts";
import { DeliveryResource } from "../../lib/webhooks/wire.ts";

export const endpoint = defineEndpoint({
  operationId: "list_project_webhook_deliveries",
  summary: "The webhook delivery log of a project",
  params: z.object({ project_id: IdParam }),
  query: z.object({ result: z.enum(["built", "ignored", "duplicate", "rejected", "failed"]).optional(), ...Pagination }),
  response: z.object({ deliveries: z.array(DeliveryResource), total: z.number().int() }),
  async handle({ params, query }, ctx) {
    const page = await listDeliveries(ctx.db, { projectId: params.project_id, result: query.result, limit: query.limit, offset: query.offset });
    return { deliveries: page.deliveries.map((d) => toPublicDelivery(d, false)), total: page.total };
  },
});
