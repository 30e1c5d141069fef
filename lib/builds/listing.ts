// The query of the two build listings (per project, per pipeline) and their page cursor
// (docs/api.md "Builds"). Pages are keyset pages, newest first: a cursor names the build number a
// page continues below, so a page costs the same on page 1 and page 20,000 and builds created
// meanwhile never shift a page. The cursor is opaque to clients (lib/schemas/cursor.ts: `b<number>`).
import { z } from "zod";
import { Pagination } from "../schemas/shared.ts";
import { cursorParam, encodeCursor } from "../schemas/cursor.ts";
import { BUILD_STATUSES } from "./state-machine.ts";
import type { Executor } from "../db/client.ts";
import { BUILD_TRIGGERS, listBuilds, toPublicBuild } from "./store.ts";
import { withTestSummaries } from "../test-results/queries.ts";

/** The tag of a build listing's cursor: `b<the build number the next page continues below>`. */
const CURSOR_TAG = "b";

export const ListBuildsQuery = z
  .object({
    status: z.enum(BUILD_STATUSES).optional(),
    branch: z.string().max(255).optional(),
    trigger_type: z.enum(BUILD_TRIGGERS).optional(),
    limit: Pagination.limit,
    cursor: cursorParam(CURSOR_TAG, 1, "builds"),
    include: z.enum(["total"]).optional().describe("total: also answer how many builds match the filters (read from counters, not counted)"),
  })
  .strict();

export const ListBuildsResponse = {
  next_cursor: z.string().nullable().describe("pass as cursor for the next (older) page; null on the last page"),
  total: z.number().int().optional().describe("builds matching the filters, only with include=total"),
};

/** One page of builds as both listings answer it: newest first, with test summaries, the next cursor and, when asked, the total. */
export async function buildListPage(db: Executor, where: { projectId: string; pipelineId?: string }, query: z.output<typeof ListBuildsQuery>) {
  const page = await listBuilds(db, {
    ...where,
    status: query.status,
    branch: query.branch,
    triggerType: query.trigger_type,
    limit: query.limit,
    before: query.cursor?.[0] as number | undefined, // a cursor of this listing is integers only (cursorParam without endsWithId)
    withTotal: query.include === "total",
  });
  return {
    builds: await withTestSummaries(db, page.builds.map(toPublicBuild)),
    next_cursor: page.nextBefore === null ? null : encodeCursor(CURSOR_TAG, [page.nextBefore]),
    ...(page.total === undefined ? {} : { total: page.total }),
  };
}
