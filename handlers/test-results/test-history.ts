// GET /v1/pipelines/{pipeline_id}/tests/{test_key} (project viewer): one test of the pipeline and
// its results across the builds of one branch (default: the project's default branch) or of one
// pull request, newest first; `before` is the previous page's next_before (a build number).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { BranchName } from "../../lib/pipelines/wire.ts";
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX } from "../../lib/schemas/shared.ts";
import { HistoryEntry, TestResource } from "../../lib/test-results/schema.ts";
import { findTest, testHistory } from "../../lib/test-results/queries.ts";

export const endpoint = defineEndpoint({
  operationId: "get_test_history",
  summary: "One test's results across the builds of a branch or pull request",
  params: z.object({ test_key: z.string().regex(/^[0-9a-f]{16}$/, "must be a test_key (16 hex digits)") }),
  query: z.object({
    branch: BranchName.optional().describe("default: the project's default branch"),
    pull_request: z.coerce.number().int().min(1).optional().describe("instead of a branch: that pull request's builds"),
    limit: z.coerce.number().int().min(1).max(PAGE_LIMIT_MAX).default(PAGE_LIMIT_DEFAULT),
    before: z.coerce.number().int().min(1).optional().describe("only builds numbered below this (the previous page's next_before)"),
  }),
  response: z.object({
    test: TestResource,
    lane: z.string().describe('the branch, or "pr:<number>"'),
    results: z.array(HistoryEntry),
    next_before: z.number().int().nullable(),
  }),
  errors: ["not_found", "invalid_request"],
  async handle({ params, query }, ctx: ProjectContext<"pipeline_id">) {
    if (query.branch && query.pull_request) fail("invalid_request", "Give a branch or a pull_request, not both.");
    const found = await findTest(ctx.db, ctx.pipeline.id, params.test_key);
    if (!found) fail("not_found", "No test with that key in this pipeline.");
    const lane = query.pull_request ? `pr:${query.pull_request}` : (query.branch ?? ctx.project.default_branch);
    const page = await testHistory(ctx.db, found.id, lane, { limit: query.limit, before: query.before });
    return { test: found.test, lane, ...page };
  },
});
