// GET /v1/webhook-deliveries (admin): every delivery, including those rejected before any project
// could be known (bad signatures, unknown repositories). Paged by cursor like a project's log
// (docs/webhooks.md "The delivery log"): the web app's admin page asks it every 10 s, and a page
// costs the same however long the log; a page filtered by result reads a bounded stretch of it.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { Pagination } from "../../lib/schemas/shared.ts";
import { cursorParam, encodeCursor } from "../../lib/schemas/cursor.ts";
import { listDeliveries, toPublicDelivery, type DeliveryPosition } from "../../lib/webhooks/deliveries.ts";
import { DeliveryResource } from "../../lib/webhooks/wire.ts";

/** The tag of this listing's cursor: `a<received_at>.<rowid>` of the delivery the next page continues below. */
const CURSOR_TAG = "a";

export const endpoint = defineEndpoint({
  operationId: "list_webhook_deliveries",
  summary: "All webhook deliveries",
  query: z
    .object({
      result: z.enum(["built", "ignored", "duplicate", "rejected", "failed"]).optional(),
      limit: Pagination.limit,
      cursor: cursorParam(CURSOR_TAG, 2, "deliveries"),
    })
    .strict(),
  response: z.object({
    deliveries: z.array(DeliveryResource),
    next_cursor: z
      .string()
      .nullable()
      .describe("pass as cursor for the next (older) page; null on the last page. With result, a page may hold fewer than limit while this is not null"),
  }),
  async handle({ query }, ctx) {
    const page = await listDeliveries(ctx.db, { result: query.result, limit: query.limit, before: query.cursor as DeliveryPosition | undefined });
    return {
      deliveries: page.deliveries.map((d) => toPublicDelivery(d, false)),
      next_cursor: page.nextBefore === null ? null : encodeCursor(CURSOR_TAG, page.nextBefore),
    };
  },
});
