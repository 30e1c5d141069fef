// The query of the two build listings (per project, per pipeline) and their page cursor
// (docs/api.md "Builds"). Pages are keyset pages, newest first: a cursor names the build number a
// page continues below, so a page costs the same on page 1 and page 20,000 and builds created
// meanwhile never shift a page. The cursor is opaque to clients (base64url of `b<number>`).
import { z } from "zod";
import { Pagination } from "../schemas/shared.ts";
import { BUILD_STATUSES } from "./state-machine.ts";
import type { Executor } from "../db/client.ts";
import { BUILD_TRIGGERS, listBuilds, toPublicBuild } from "./store.ts";
import { withTestSummaries } from "../test-results/queries.ts";

export function encodeBuildCursor(beforeBuildNumber: number): string {
  return Buffer.from(`b${beforeBuildNumber}`).toString("base64url");
}

/** The build number a cursor continues below, or null when it is not one this API gave out. */
export function decodeBuildCursor(cursor: string): number | null {
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(cursor)) return null;
  const text = Buffer.from(cursor, "base64url").toString("latin1");
  const match = /^b([1-9]\d{0,15})$/.exec(text);
  if (!match) return null;
  const n = Number(match[1]);
  return Number.isSafeInteger(n) ? n : null;
}

const Cursor = z
  .string()
  .transform((value, ctx) => {
    const before = decodeBuildCursor(value);
    if (before === null) {
      ctx.addIssue({ code: "custom", message: "is not a cursor from this listing (use next_cursor as given)" });
      return z.NEVER;
    }
    return before;
  })
  .optional()
  .describe("next_cursor of the previous page; omit for the newest builds");

export const ListBuildsQuery = z
  .object({
    status: z.enum(BUILD_STATUSES).optional(),
    branch: z.string().max(255).optional(),
    trigger_type: z.enum(BUILD_TRIGGERS).optional(),
    limit: Pagination.limit,
    cursor: Cursor,
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
    before: query.cursor,
    withTotal: query.include === "total",
  });
  return {
    builds: await withTestSummaries(db, page.builds.map(toPublicBuild)),
    next_cursor: page.nextBefore === null ? null : encodeBuildCursor(page.nextBefore),
    ...(page.total === undefined ? {} : { total: page.total }),
  };
}
