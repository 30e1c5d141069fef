// GitHub check runs (docs/github.md "Check runs"): for each finished build that sent test reports
// to a GitHub repository, one check run named after its pipeline (roost/<pipeline>) on the
// build's commit, with the test summary and an annotation on the file and line of each failed
// test and each analyzer issue (Checks API, https://docs.github.com/en/rest/checks/runs). The App
// needs the "Checks: read and write" permission; without it GitHub answers 403, which is retried
// with backoff like commit statuses and raises an operator incident after a few attempts. Like
// the commit status reporter this works from the database, in any daemon process.
//
// What is due is kept in check_run_reports (schema.sql migration 47), one row per build, written by
// triggers in the transaction that finishes a build with test results on a GitHub repository (or
// writes the first results of a finished one). A pass reads only the due rows (check_run_reports_due,
// done = 0), never the builds, so its cost does not grow with the builds of the day:
//   1. it claims up to `limit` due rows in one UPDATE (claimed_by, and next_attempt_at moved
//      CLAIM_SECONDS on), so no other daemon sends them meanwhile; a daemon that dies mid-pass
//      leaves them due again when that runs out;
//   2. forgets the rows of builds that finished more than a day ago (not reported late);
//   3. sends each of the others and records it, sent (done) or failed with its retry time. Each
//      send (its token, the check run and its batches of annotations) is stopped after
//      SEND_TIMEOUT_MS, and a pass starts no send once too little of its claim is left for one,
//      so no send outlives the claim that keeps other daemons from sending it too; a stopped
//      send is retried with backoff, like any failure.
// Sent rows are kept a day (what was reported, for the records), then removed a bounded piece at a
// time by pruneCheckRunReports in the daemon's 10-minute pass.
import { all, one, str, type Executor } from "../db/client.ts";
import type { Row } from "../db/database.ts";
import { newId } from "../auth/secrets.ts";
import { findIntegration } from "../integrations/store.ts";
import { raiseIncident, resolveIncident } from "../daemon/incidents.ts";
import { backoffSeconds, REPORT_ATTEMPTS_BEFORE_INCIDENT, type ReporterDeps } from "../forges/commit-statuses.ts";
import type { CheckRunAnnotation, CheckRunBody } from "../forges/github/api.ts";
import { ForgeApiError, stopReason } from "../forges/http.ts";
import { failedCases, listAnnotations, statusSentence, summaryOf, testsPageUrl } from "./queries.ts";

/** GitHub takes at most 50 annotations a request; more than this many in all would be noise. */
const ANNOTATIONS_PER_REQUEST = 50;
export const MAX_CHECK_RUN_ANNOTATIONS = 200;
const REPORT_WINDOW_SECONDS = 24 * 3600;
/** A claim not recorded within this long (its daemon died) is due again; a pass sends at most `limit` check runs one after another. */
const CLAIM_SECONDS = 300;
/**
 * How long one check run's send may take, all its requests together: well under the claim. A pass
 * sends up to `limit` (10) one after another, and starts none later than SEND_TIMEOUT_MS before
 * its claim runs out, so its last send ends a minute before it at the latest.
 */
export const SEND_TIMEOUT_MS = 20_000;
const CLAIM_MARGIN_MS = 60_000;
/** Sent rows are kept this long after they were sent, then pruned, PRUNE_PIECE rows at a time. */
const KEEP_SENT_SECONDS = 24 * 3600;
export const PRUNE_PIECE = 500;
const CONCLUSION = { succeeded: "success", failed: "failure", canceled: "cancelled" } as const;
const LEVEL = { error: "failure", warning: "warning", notice: "notice" } as const;

/** One pass: claims up to `limit` due check runs and sends them, each within `sendTimeoutMs`; returns how many were sent. */
export async function reportCheckRuns(deps: ReporterDeps, limit = 10, sendTimeoutMs = SEND_TIMEOUT_MS): Promise<number> {
  const claimedAt = performance.now();
  // Looked at first with a read of the due index: the claim is an UPDATE, which takes the write
  // lock even when it claims nothing, and most passes (every 2 s, on every daemon) find nothing.
  if (!(await one(deps.db, "SELECT 1 FROM check_run_reports WHERE done = 0 AND next_attempt_at <= ? LIMIT 1", [deps.now]))) return 0;
  const claimer = deps.claimer ?? newId();
  const claimed = (
    await deps.db.execute({
      sql: `UPDATE check_run_reports SET claimed_by = ?, next_attempt_at = ?
            WHERE rowid IN (SELECT rowid FROM check_run_reports WHERE done = 0 AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT +?)
            RETURNING build_id, attempts, finished_at`,
      args: [claimer, deps.now + CLAIM_SECONDS, deps.now, limit],
    })
  ).rows;
  if (claimed.length === 0) return 0;
  const late = claimed.filter((r) => Number(r.finished_at) < deps.now - REPORT_WINDOW_SECONDS).map((r) => str(r, "build_id"));
  const due = claimed.filter((r) => Number(r.finished_at) >= deps.now - REPORT_WINDOW_SECONDS);
  if (late.length)
    await deps.db.execute({
      sql: `DELETE FROM check_run_reports WHERE claimed_by = ? AND build_id IN (${late.map(() => "?").join(", ")})`,
      args: [claimer, ...late],
    });
  if (due.length === 0) return 0;
  const ids = due.map((r) => str(r, "build_id"));
  const details = new Map<string, Row>();
  for (const row of await all(
    deps.db,
    `SELECT b.id, b.status, b.commit_sha, b.build_number, b.project_id, pl.name AS pipeline_name, r.full_name, r.integration_id
     FROM builds b JOIN pipelines pl ON pl.id = b.pipeline_id JOIN projects p ON p.id = b.project_id JOIN repositories r ON r.id = p.repository_id
     WHERE b.id IN (${ids.map(() => "?").join(", ")})`,
    ids,
  ))
    details.set(str(row, "id"), row);
  // The GitHub client (and jose, for the App's JWT) loads with the first check run to send, not
  // with the first pass of an idle daemon (docs/benchmarks.md, "idle RSS").
  const { githubClientFor } = await import("../forges/github/index.ts");
  let sent = 0;
  for (const [index, claim] of due.entries()) {
    const buildId = str(claim, "build_id");
    // Too little of the claim is left for a whole send: the rest are given back, due at once.
    if (performance.now() - claimedAt > CLAIM_SECONDS * 1000 - CLAIM_MARGIN_MS - sendTimeoutMs) {
      const rest = due.slice(index).map((r) => str(r, "build_id"));
      await deps.db.execute({
        sql: `UPDATE check_run_reports SET claimed_by = NULL, next_attempt_at = ? WHERE claimed_by = ? AND build_id IN (${rest.map(() => "?").join(", ")})`,
        args: [deps.now, claimer, ...rest],
      });
      break;
    }
    const row = details.get(buildId);
    // The build's project no longer builds a repository: nothing to report to.
    if (!row) {
      await deps.db.execute({ sql: "DELETE FROM check_run_reports WHERE build_id = ? AND claimed_by = ?", args: [buildId, claimer] });
      continue;
    }
    const integrationId = str(row, "integration_id");
    const send = new AbortController();
    const timer = setTimeout(() => send.abort(new Error(`the check run took longer than ${sendTimeoutMs / 1000} s to send`)), sendTimeoutMs);
    try {
      const integration = await findIntegration(deps.db, integrationId);
      if (!integration) throw new Error("the repository's integration is gone");
      const client = await githubClientFor({ ...deps, signal: send.signal }, integration);
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
        sql: `UPDATE check_run_reports SET check_run_id = ?, done = 1, attempts = 0, last_error = NULL, claimed_by = NULL, updated_at = ? WHERE build_id = ? AND claimed_by = ?`,
        args: [String(created.id), deps.now, buildId, claimer],
      });
      await resolveIncident(deps.db, deps.now, "integration", integrationId, "check_run_failed");
      sent++;
    } catch (error) {
      const attempts = Number(claim.attempts ?? 0) + 1;
      // Stopped while reading an answer, the error is the fetch's own; the reason says why.
      const message = send.signal.aborted && !(error instanceof ForgeApiError) ? stopReason(send.signal) : (error as Error).message;
      await deps.db.execute({
        sql: `UPDATE check_run_reports SET attempts = ?, next_attempt_at = ?, last_error = ?, claimed_by = NULL, updated_at = ? WHERE build_id = ? AND claimed_by = ?`,
        args: [attempts, deps.now + backoffSeconds(attempts), message, deps.now, buildId, claimer],
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
    } finally {
      clearTimeout(timer);
    }
  }
  return sent;
}

/**
 * Removes up to `piece` rows sent more than a day before `now` (oldest first, along
 * check_run_reports_sent), so the table holds about a day of history however long the daemon runs;
 * returns how many it removed. A bounded delete holds the write lock briefly; the caller repeats
 * it while a whole piece goes.
 */
export async function pruneCheckRunReports(db: Executor, now: number, piece = PRUNE_PIECE): Promise<number> {
  const removed = await db.execute({
    sql: `DELETE FROM check_run_reports WHERE rowid IN (
            SELECT rowid FROM check_run_reports INDEXED BY check_run_reports_sent WHERE done = 1 AND updated_at < ? ORDER BY updated_at LIMIT +?)`,
    args: [now - KEEP_SENT_SECONDS, piece],
  });
  return removed.rowsAffected;
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
