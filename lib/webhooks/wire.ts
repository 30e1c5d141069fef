// The delivery log's wire shape, and the query and page of its two listings (a project's, the admin's).
import { z } from "zod";
import { FORGE_NAMES } from "../forges/registry.ts";
import { Pagination } from "../schemas/shared.ts";
import { cursorParam } from "../schemas/cursor.ts";

const DELIVERY_RESULTS = ["built", "ignored", "duplicate", "rejected", "failed"] as const;

export const DeliveryResource = z.object({
  id: z.string(),
  host: z.enum(FORGE_NAMES).describe("git: the generic push webhook or a poll of a plain git remote"),
  delivery_id: z
    .string()
    .describe("X-GitHub-Delivery, X-Gitlab-Event-UUID, X-Gitea-Delivery, the generic webhook's X-Roost-Delivery, or poll:<ref>@<commit> for a poll"),
  event: z.string(),
  action: z.string(),
  verified: z.boolean(),
  result: z.enum(DELIVERY_RESULTS),
  reason: z.string().describe("why, in a sentence"),
  repository_external_id: z.string().nullable(),
  repository_full_name: z.string().nullable(),
  repository_id: z.string().nullable(),
  project_id: z.string().nullable(),
  commit_sha: z.string().nullable(),
  decisions: z.array(
    z.object({
      pipeline_id: z.string(),
      pipeline_name: z.string(),
      build: z.boolean(),
      reason: z.string().describe('e.g. "branch feature/x not in [main, release/*]"'),
      build_id: z.string().optional(),
      build_number: z.number().int().optional(),
      file_problem: z
        .literal(true)
        .optional()
        .describe("present when the pipeline file this pipeline reads was invalid or unreadable at the commit; reason names the line and why"),
    }),
  ),
  duplicate_of: z.string().nullable(),
  received_at: z.number().int(),
});

/** The query of a delivery log listing whose cursors carry `tag` (docs/webhooks.md "The delivery log"). */
export function deliveryLogQuery(tag: string) {
  return z.object({ result: z.enum(DELIVERY_RESULTS).optional(), limit: Pagination.limit, cursor: cursorParam(tag, 2, "deliveries", true) }).strict();
}

/** A page of a delivery log: newest first, without bodies. */
export const DeliveryLogPage = z.object({
  deliveries: z.array(DeliveryResource),
  next_cursor: z
    .string()
    .nullable()
    .describe(
      "pass as cursor for the next (older) page; null on the last page (in the admin log a page filtered by result may hold fewer than limit before it)",
    ),
});

/** A page of the admin's log: a page filtered by result reads a bounded stretch of it (DELIVERY_SCAN_WINDOW) and says where it stopped. */
export const AdminDeliveryLogPage = DeliveryLogPage.extend({
  searched_back_to: z
    .number()
    .int()
    .nullable()
    .describe(
      "on a page filtered by result that read its whole stretch of the log before finding limit: the received_at of the oldest delivery it read; next_cursor searches on below it. null otherwise",
    ),
});
