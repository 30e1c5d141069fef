// GET /v1/builds/{build_id}/tests/cases (project viewer): a page of the build's test results,
// failures first (failed and errored, then skipped, then passed), filtered by status and by a
// search of the test's name or suite; `cursor` is the previous page's next_cursor (keyset paging).
// Each case carries its last results in the build's lane and, when failed, since when.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, SearchQuery } from "../../lib/schemas/shared.ts";
import { CaseStatus, TestCaseResource } from "../../lib/test-results/schema.ts";
import { listCases } from "../../lib/test-results/queries.ts";

export const Query = z.object({
  status: z
    .string()
    .max(100)
    .transform((s) =>
      s
        .split(",")
        .map((v) => v.trim())
        .filter(Boolean),
    )
    .pipe(z.array(CaseStatus).max(4))
    .optional()
    .describe("comma-separated: passed, failed, error, skipped"),
  q: SearchQuery,
  limit: z.coerce.number().int().min(1).max(PAGE_LIMIT_MAX).default(PAGE_LIMIT_DEFAULT),
  cursor: z
    .string()
    .regex(/^\d\.\d{1,10}$/, "must be a next_cursor this endpoint answered")
    .optional(),
});

export const endpoint = defineEndpoint({
  operationId: "list_build_test_cases",
  summary: "A build's test results, failures first",
  query: Query,
  response: z.object({ cases: z.array(TestCaseResource), next_cursor: z.string().nullable() }),
  async handle({ query }, ctx: ProjectContext<"build_id">) {
    return listCases(ctx.db, ctx.build, {
      buildId: ctx.build.id,
      statuses: query.status ?? [],
      q: query.q || undefined,
      limit: query.limit,
      cursor: query.cursor,
    });
  },
});
