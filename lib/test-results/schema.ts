// The API's shapes of test results (docs/api.md "Test results"), one per thing on the wire.
import { z } from "zod";
import { Timestamp } from "../schemas/shared.ts";
import { TestReportResource } from "../runners/protocol-wire.ts";
import { BuildResource } from "../builds/wire.ts";

export const CaseStatus = z.enum(["passed", "failed", "error", "skipped"]);

export const TestSummary = z.object({
  total: z.number().int(),
  passed: z.number().int(),
  failed: z.number().int(),
  errored: z.number().int().describe("ended with an error other than a failed expectation"),
  skipped: z.number().int(),
  flaky: z.number().int().describe("results that disagree with another build of the same commit"),
  duration_ms: z.number().int().describe("sum of the tests' durations"),
  coverage_percent: z.number().nullable().describe("line coverage of the build's lcov reports; null without one"),
  annotations: z.number().int().describe("analyzer issues"),
  text: z.string().describe('e.g. "123 passed, 2 failed, 1 skipped"'),
});

export const ResultDot = z.object({ build_id: z.string(), build_number: z.number().int(), status: CaseStatus });

export const TestCaseResource = z.object({
  id: z.string().describe("the result's number in its build"),
  test_key: z.string().describe("the test's identity in its pipeline: GET /v1/pipelines/{pipeline_id}/tests/{test_key}"),
  suite: z.string(),
  name: z.string(),
  status: CaseStatus,
  flaky: z.boolean().describe("another build of the same commit had the opposite result"),
  duration_ms: z.number().int().nullable(),
  message: z.string().nullable(),
  stack: z.string().nullable(),
  output: z.string().nullable().describe("what the test printed"),
  file: z.string().nullable().describe("relative to the checkout"),
  line: z.number().int().nullable(),
  last_results: z
    .array(ResultDot)
    .describe("this test's last results in the build's lane (branch or pull request), newest first, this build's included; at most 10"),
  failing_since: z
    .object({ build_id: z.string(), build_number: z.number().int() })
    .nullable()
    .describe("a failed case: the first build of the unbroken run of failures it is in (this build when it is a new failure); null otherwise"),
  new_failure: z.boolean().describe("failed here, and passed (or did not exist) in the lane's build before"),
});

export const Annotation = z.object({
  severity: z.enum(["error", "warning", "notice"]),
  file: z.string(),
  line: z.number().int(),
  column: z.number().int().nullable(),
  code: z.string(),
  message: z.string(),
});

export const BuildTestsAnswer = z.object({
  summary: TestSummary.nullable().describe("null: the build sent no test report"),
  reports: z.array(TestReportResource),
  annotations: z.array(Annotation).describe("analyzer issues (dart analyze --format=machine), at most 2000"),
  source_file_url: z
    .string()
    .nullable()
    .describe("a link to a file on the source host at the build's commit, with {path} and {line} to fill in; null for a plain git remote"),
});

export const TestResource = z.object({
  test_key: z.string(),
  suite: z.string(),
  name: z.string(),
  runs: z.number().int().describe("results other than skipped, in every build of the pipeline"),
  failures: z.number().int(),
  failure_rate: z.number().describe("failures / runs, 0–1"),
  flaky_runs: z.number().int(),
  last_flaky_at: Timestamp.nullable(),
  last_flaky_build_id: z.string().nullable(),
  first_seen_at: Timestamp,
  last_seen_at: Timestamp,
});

export const HistoryEntry = z.object({
  build_id: z.string(),
  build_number: z.number().int(),
  commit_sha: z.string(),
  status: CaseStatus,
  flaky: z.boolean(),
  duration_ms: z.number().int().nullable(),
  message: z.string().nullable(),
  created_at: Timestamp,
});

export const CoverageFileResource = z.object({
  path: z.string(),
  lines_found: z.number().int(),
  lines_hit: z.number().int(),
  percent: z.number(),
  baseline_percent: z.number().nullable().describe("the same file in the baseline build; null when it was not there"),
  change: z.number().nullable().describe("percentage points against the baseline"),
});

export const CoverageAnswer = z.object({
  coverage: z.object({ lines_found: z.number().int(), lines_hit: z.number().int(), percent: z.number() }).nullable(),
  baseline: z
    .object({ build_id: z.string(), build_number: z.number().int(), lane: z.string(), percent: z.number() })
    .nullable()
    .describe(
      "the newest earlier build with coverage on the target branch (a pull request's target, else the project's default branch; a default-branch build compares with the one before it)",
    ),
  change: z.number().nullable().describe("percentage points against the baseline"),
  files: z.array(CoverageFileResource).describe("the files that lost the most coverage first"),
  total_files: z.number().int(),
});

export const TrendPoint = z.object({
  build_id: z.string(),
  build_number: z.number().int(),
  branch: z.string(),
  status: z.string(),
  queued_at: Timestamp,
  queue_ms: z.number().int().nullable(),
  duration_ms: z.number().int().nullable(),
  tests: TestSummary.nullable(),
  artifacts: z.array(z.object({ path: z.string(), size: z.number().int() })),
});

/** A build in a list, with its tests in one line ("123 passed, 2 failed"). */
export const BuildListItem = BuildResource.extend({ test_summary: TestSummary.nullable().describe("null: the build sent no test report") });
