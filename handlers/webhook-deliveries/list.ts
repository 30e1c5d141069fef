// GET /v1/projects/{project_id}/webhook-deliveries (project maintainer): the delivery log of a
// project, newest first: every delivery for its repository, what it was, and why each pipeline
// did or did not build. Bodies are not listed (GET /v1/webhook-deliveries/{id}). Paged by cursor,
// as the build listings are (docs/webhooks.md "The delivery log"): a page costs the same at any depth of the log.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { encodeCursor } from "../../lib/schemas/cursor.ts";
import { listProjectDeliveries, toPublicDelivery, type DeliveryPosition } from "../../lib/webhooks/deliveries.ts";
import { deliveryLogQuery, DeliveryLogPage } from "../../lib/webhooks/wire.ts";

/**
 * The tag of this listing's cursor: `p<received_at>.<id>` of the delivery the next page continues
 * below. It was `d`, with the rowid for the id (DeliveryPosition says why not): a cursor of that
 * form is refused, not read another way.
 */
const CURSOR_TAG = "p";

export const endpoint = defineEndpoint({
  operationId: "list_project_webhook_deliveries",
  summary: "The webhook delivery log of a project",
  params: z.object({ project_id: IdParam }),
  query: deliveryLogQuery(CURSOR_TAG),
  response: DeliveryLogPage,
  async handle({ params, query }, ctx) {
    const page = await listProjectDeliveries(ctx.db, {
      projectId: params.project_id,
      result: query.result,
      limit: query.limit,
      before: query.cursor as DeliveryPosition | undefined,
    });
    return {
      deliveries: page.deliveries.map((d) => toPublicDelivery(d, false)),
      next_cursor: page.nextBefore === null ? null : encodeCursor(CURSOR_TAG, page.nextBefore),
    };
  },
});
