// GET /v1/webhook-deliveries (admin): every delivery, including those rejected before any project
// could be known (bad signatures, unknown repositories). Paged by cursor like a project's log
// (docs/webhooks.md "The delivery log"): the web app's admin page asks it every 10 s, and a page
// costs the same however long the log; a page filtered by result reads a bounded stretch of it and
// says where it stopped (searched_back_to).
import { defineEndpoint } from "../../lib/http/route.ts";
import { encodeCursor } from "../../lib/schemas/cursor.ts";
import { listDeliveries, toPublicDelivery, type DeliveryPosition } from "../../lib/webhooks/deliveries.ts";
import { AdminDeliveryLogPage, deliveryLogQuery } from "../../lib/webhooks/wire.ts";

/**
 * The tag of this listing's cursor: `w<received_at>.<id>` of the delivery the next page continues
 * below. It was `a`, with the rowid for the id (DeliveryPosition says why not): a cursor of that
 * form is refused, not read another way.
 */
const CURSOR_TAG = "w";

export const endpoint = defineEndpoint({
  operationId: "list_webhook_deliveries",
  summary: "All webhook deliveries",
  query: deliveryLogQuery(CURSOR_TAG),
  response: AdminDeliveryLogPage,
  async handle({ query }, ctx) {
    const page = await listDeliveries(ctx.db, { result: query.result, limit: query.limit, before: query.cursor as DeliveryPosition | undefined });
    return {
      deliveries: page.deliveries.map((d) => toPublicDelivery(d, false)),
      next_cursor: page.nextBefore === null ? null : encodeCursor(CURSOR_TAG, page.nextBefore),
      searched_back_to: page.searchedBackTo,
    };
  },
});
