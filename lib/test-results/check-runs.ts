// GitHub check runs (docs/github.md "Check runs"): for each finished build that sent test reports
// to a GitHub repository, one check run named after its pipeline (roost/<pipeline>) on the
// build's commit, with the test summary and an annotation on the file and line of each failed
// test and each analyzer issue (Checks API, https://docs.github.com/en/rest/checks/runs). The App
// needs the "Checks: read and write" permission; without it GitHub answers 403, which is retried
// with backoff like commit statuses and raises an operator incident after a few attempts. Like
// the commit status reporter this works from the database, in any daemon process.
import { all, str } from "../db/client.ts";
import { findIntegration } from "../integrations/store.ts";
import { raiseIncident, resolveIncident } from "../daemon/incidents.ts";
import { backoffSeconds, REPORT_ATTEMPTS_BEFORE_INCIDENT, type ReporterDeps } from "../forges/commit-statuses.ts";
import type { CheckRunAnnotation, CheckRunBody } from "../forges/github/api.ts";
import { failedCases, listAnnotations, statusSentence, summaryOf, testsPageUrl } from "./queries.ts";

/** GitHub takes at most 50 annotations a request; more than this many in all would be noise. */
const ANNOTATIONS_PER_REQUEST = 50;
export const MAX_CHECK_RUN_ANNOTATIONS = 200;
const REPORT_WINDOW_SECONDS = 24 * 3600;
const CONCLUSION = { succeeded: "success", failed: "failure", canceled: "cancelled" } as const;
const LEVEL = { error: "failure", warning: "warning", notice: "notice" } as const;

/**
 * One pass: sends the check runs of up to `limit` finished builds; returns how many were sent.
 * The builds are read as the range of the last day's updates (builds_updated_at): left to itself
 * SQLite read every finished build by status, seconds at a million builds, on the event loop.
 */
export async function reportCheckRuns(deps: ReporterDeps, limit = 10): Promise<number> {
  const rows = await all(
    deps.db,
    `SELECT b.id, b.status, b.commit_sha, b.build_number, b.project_id, pl.name AS pipeline_name, r.full_name, r.integration_id, c.attempts
     FROM build_test_summaries s
     JOIN builds b INDEXED BY builds_updated_at ON b.id = s.build_id
     JOIN pipelines pl ON pl.id = b.pipeline_id
     JOIN projects p ON p.id = b.project_id
     JOIN repositories r ON r.id = p.repository_id
     LEFT JOIN check_run_reports c ON c.build_id = b.id
     WHERE r.provider = 'github' AND b.status IN ('succeeded', 'failed', 'canceled') AND b.updated_at >= ?
       AND COALESCE(c.done, 0) = 0 AND COALESCE(c.next_attempt_at, 0) <= ?
     ORDER BY b.updated_at LIMIT +?`,
    [deps.now - REPORT_WINDOW_SECONDS, deps.now, limit],
  );
  if (rows.length === 0) return 0;
  // The GitHub client (and jose, for the App's JWT) loads with the first check run to send, not
  // with the first pass of an idle daemon (docs/benchmarks.md, "idle RSS").
  const { githubClientFor } = await import("../forges/github/index.ts");
  let sent = 0;
  for (const row of rows) {
    const buildId = str(row, "id");
    const integrationId = str(row, "integration_id");
    try {
      const integration = await findIntegration(deps.db, integrationId);
      if (!integration) throw new Error("the repository's integration is gone");
      const client = await githubClientFor(deps, integration);
      const { body, annotations } = await checkRunOf(deps, row);
      const fullName = str(row, "full_name");
      const created = await client.createCheckRun(fullName, {
        ...body,
        name: `roost/${str(row, "pipeline_name")}`,
        head_sha: str(row, "commit_sha"),
        output: { ...body.output, annotations: annotations.slice(0, ANNOTATIONS_PER_REQUEST) },
      });
      for (let i = ANNOTATIONS_PER_REQUEST; i < annotations.length; i += ANNOTATIONS_PER_REQUEST) {
        await client.updateCheckRun(fullName, created.id, { output: { ...body.output, annotations: annotations.slice(i, i + ANNOTATIONS_PER_REQUEST) } });
      }
      await deps.db.execute({
        sql: `INSERT INTO check_run_reports (build_id, check_run_id, done, attempts, next_attempt_at, last_error, updated_at) VALUES (?, ?, 1, 0, 0, NULL, ?)
              ON CONFLICT (build_id) DO UPDATE SET check_run_id = excluded.check_run_id, done = 1, attempts = 0, last_error = NULL, updated_at = excluded.updated_at`,
        args: [buildId, String(created.id), deps.now],
      });
      await resolveIncident(deps.db, deps.now, "integration", integrationId, "check_run_failed");
      sent++;
    } catch (error) {
      const attempts = Number(row.attempts ?? 0) + 1;
      const message = (error as Error).message;
      await deps.db.execute({
        sql: `INSERT INTO check_run_reports (build_id, done, attempts, next_attempt_at, last_error, updated_at) VALUES (?, 0, ?, ?, ?, ?)
              ON CONFLICT (build_id) DO UPDATE SET attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at, last_error = excluded.last_error, updated_at = excluded.updated_at`,
        args: [buildId, attempts, deps.now + backoffSeconds(attempts), message, deps.now],
      });
      deps.log.warn("check run not reported; will retry", { build_id: buildId, attempts, error: message });
      if (attempts >= REPORT_ATTEMPTS_BEFORE_INCIDENT) {
        await raiseIncident(deps.db, deps.now, {
          severity: "warning",
          reason: "check_run_failed",
          message: `Check runs for ${str(row, "full_name")} cannot be reported: ${message}`,
          repair_action:
            'Give the GitHub App the repository permission "Checks: Read and write" and accept it on the installation (docs/github.md "Check runs").',
          resource_kind: "integration",
          resource_id: integrationId,
          resource_name: str(row, "full_name"),
        });
      }
    }
  }
  return sent;
}

/** The check run's conclusion, title, summary (Markdown) and annotations for one build. */
async function checkRunOf(deps: ReporterDeps, row: Record<string, unknown>): Promise<{ body: CheckRunBody; annotations: CheckRunAnnotation[] }> {
  const buildId = String(row.id);
  const status = String(row.status) as keyof typeof CONCLUSION;
  const summary = await summaryOf(deps.db, buildId);
  const failed = await failedCases(deps.db, buildId, MAX_CHECK_RUN_ANNOTATIONS);
  const issues = await listAnnotations(deps.db, buildId);
  const url = testsPageUrl(deps.baseUrl, { project_id: String(row.project_id), id: buildId });
  const title = (summary && statusSentence(summary)) ?? `Build #${row.build_number} ${status}`;
  const lines = [`**${title}** in build [#${row.build_number}](${url}).`, ""];
  if (summary && summary.total > 0) lines.push(`${summary.text}${summary.flaky ? `, ${summary.flaky} flaky` : ""}.`);
  if (summary?.coverage_percent !== null && summary?.coverage_percent !== undefined) lines.push(`Line coverage ${summary.coverage_percent} %.`);
  if (issues.length) lines.push(`${issues.length} analyzer issue${issues.length === 1 ? "" : "s"}.`);
  if (failed.length) {
    lines.push("", "Failed tests:");
    for (const c of failed.slice(0, 20))
      lines.push(
        `- ${mdText(c.suite)} › ${mdText(c.name)}${c.message ? `: ${mdText(c.message.split("\n", 1)[0]!.slice(0, 200))}` : ""}${c.file ? ` (${mdText(c.file)}${c.line ? `:${c.line}` : ""})` : ""}`,
      );
    if (summary && summary.failed + summary.errored > 20) lines.push(`- … and ${summary.failed + summary.errored - 20} more: ${url}`);
  }
  const annotations: CheckRunAnnotation[] = [];
  for (const c of failed) {
    if (!c.file || !c.line) continue;
    annotations.push({
      path: c.file,
      start_line: c.line,
      end_line: c.line,
      annotation_level: "failure",
      title: `${c.suite} › ${c.name}`.slice(0, 255),
      message: c.message ?? `${c.status === "error" ? "Errored" : "Failed"}.`,
      ...(c.stack ? { raw_details: c.stack } : {}),
    });
  }
  for (const a of issues)
    annotations.push({ path: a.file, start_line: a.line, end_line: a.line, annotation_level: LEVEL[a.severity], title: a.code, message: a.message });
  return {
    body: {
      status: "completed",
      conclusion: CONCLUSION[status],
      details_url: url,
      external_id: buildId,
      output: { title, summary: lines.join("\n").slice(0, 65_000) },
    },
    annotations: annotations.slice(0, MAX_CHECK_RUN_ANNOTATIONS),
  };
}

/** Text shown as itself in Markdown. */
function mdText(text: string): string {
  return text.replace(/[\\`*_[\]<>|]/g, (c) => `\\${c}`);
}
