// GET /v1/builds/{build_id}/coverage (project viewer): the build's line coverage (lcov reports),
// its change against the newest earlier build with coverage on the target branch (a pull
// request's target, else the project's default branch), and its files, those that lost the most
// first (offset paging: a build holds at most 20,000 files).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { Pagination } from "../../lib/schemas/shared.ts";
import { CoverageAnswer } from "../../lib/test-results/schema.ts";
import { coverageOf } from "../../lib/test-results/queries.ts";

export const endpoint = defineEndpoint({
  operationId: "get_build_coverage",
  summary: "A build's coverage and its change against the target branch",
  query: z.object(Pagination),
  response: CoverageAnswer,
  async handle({ query }, ctx: ProjectContext<"build_id">) {
    return coverageOf(ctx.db, ctx.build, ctx.project.default_branch, query);
  },
});
