// GET /v1/builds/{build_id}/tests (project viewer): what the build's test reports said in sum
// (docs/test-results.md): the counts, each report with what reading it found, analyzer issues, and
// how to link a file and line to the source host.
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { findRepository } from "../../lib/integrations/repositories.ts";
import { sourceFileUrl } from "../../lib/test-results/source-links.ts";
import { BuildTestsAnswer } from "../../lib/test-results/schema.ts";
import { listAnnotations, listReports, summaryOf } from "../../lib/test-results/queries.ts";

export const endpoint = defineEndpoint({
  operationId: "get_build_tests",
  summary: "A build's test summary, reports and analyzer issues",
  response: BuildTestsAnswer,
  async handle(_input, ctx: ProjectContext<"build_id">) {
    const repository = await findRepository(ctx.db, ctx.project.repository_id);
    return {
      summary: await summaryOf(ctx.db, ctx.build.id),
      reports: await listReports(ctx.db, ctx.build.id),
      annotations: await listAnnotations(ctx.db, ctx.build.id),
      source_file_url: sourceFileUrl(repository, ctx.build.commit_sha),
    };
  },
});
