// PUT /v1/runners/{runner_id}/jobs/{job_id}/test-reports?path=<relative path> (runner token): one
// test report's raw bytes as the body (docs/test-results.md). The daemon reads it as it streams in
// (lib/test-results/read.ts), at most TEST_REPORT_LIMIT bytes, and records what it held for the
// build in one transaction. A report that is malformed, cut short, over a bound or of an unknown
// format is still answered 201: its status and problems say what was kept, and the runner writes
// them into the build's log. Only a second upload of the same path is refused (409).
import { z } from "zod";
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { requestBody } from "../../lib/http/io.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { ownedRunningJob } from "../../lib/runners/protocol.ts";
import { findBuild } from "../../lib/builds/store.ts";
import { isUniqueViolation } from "../../lib/db/client.ts";
import { validArtifactPath } from "../../lib/artifacts/artifacts.ts";
import { HEADER, TEST_REPORT_LIMIT, TEST_REPORTS_PER_BUILD, TestReportAnswer } from "../../lib/runners/protocol-wire.ts";
import { readReport } from "../../lib/test-results/read.ts";
import { recordRejectedReport, recordReport, reportsOfBuild } from "../../lib/test-results/record.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_upload_test_report",
  summary: "Runner: upload one test report",
  description: `The raw file as the body, at most ${TEST_REPORT_LIMIT} bytes (a larger file's first bytes, with its whole size in X-Roost-Report-Bytes). X-Roost-Workspace names the runner's checkout path, removed from the paths the report names.`,
  params: z.object({ job_id: IdParam }),
  query: z.object({ path: z.string().max(500).refine(validArtifactPath, "must be a relative path inside the workspace") }),
  ...created(TestReportAnswer),
  errors: ["job_not_assigned", "job_finished", "test_report_exists"],
  async handle({ params, query }, ctx: RunnerContext) {
    const job = await ownedRunningJob(ctx, params.job_id);
    const build = (await findBuild(ctx.db, job.build_id))!;
    const existing = await reportsOfBuild(ctx.db, build.id, query.path);
    if (existing.exists) fail("test_report_exists", `This build already has the test report ${query.path}.`);
    const declared = Number(ctx.request.headers.get(HEADER.reportBytes) ?? ctx.request.headers.get("content-length") ?? NaN);
    const declaredBytes = Number.isSafeInteger(declared) && declared >= 0 ? declared : null;
    const now = ctx.clock.now();
    if (existing.count >= TEST_REPORTS_PER_BUILD) {
      await requestBody(ctx.request)
        ?.cancel()
        .catch(() => {});
      const problem = `A build reads at most ${TEST_REPORTS_PER_BUILD} test reports; ${query.path} was not read. Narrow the pipeline's test_reports patterns.`;
      return { report: await recordRejectedReport(ctx.db, { build, jobId: job.id, path: query.path, problem, bytes: 0, now }) };
    }
    const workspace = ctx.request.headers.get(HEADER.workspace);
    const read = await readReport(requestBody(ctx.request), {
      path: query.path,
      workspace: workspace?.startsWith("/") ? workspace : null,
      maxBytes: TEST_REPORT_LIMIT,
    });
    try {
      return { report: await recordReport(ctx.db, { build, jobId: job.id, path: query.path, read, declaredBytes, now }) };
    } catch (error) {
      // The same path uploaded twice at once: the other upload recorded it.
      if (isUniqueViolation(error)) fail("test_report_exists", `This build already has the test report ${query.path}.`);
      throw error;
    }
  },
});
