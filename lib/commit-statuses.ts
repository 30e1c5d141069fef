// Commit statuses back to GitHub, GitLab, Gitea/Forgejo and Bitbucket Cloud (docs/webhooks.md "Commit statuses"; plain git remotes have none). The reporter
// compares each recent build's status with the one last reported and sends the difference, so
// it needs no queue that a crash could lose, and any daemon process can run it. A failure is
// retried with exponential backoff and jitter, never touches the build, and raises an operator
// incident for the integration after REPORT_ATTEMPTS_BEFORE_INCIDENT consecutive failures.
import type { Db } from "./db/client.ts";
import { all } from "./db/client.ts";
import type { Logger } from "./log.ts";
import { findIntegration } from "./db/integrations.ts";
import { githubClientFor, gitlabClientFor, type ForgeDeps } from "./integrations/index.ts";
import { bitbucketClientFor, giteaClientFor } from "./integrations/any-git.ts";
import type { GiteaState } from "./forges/gitea/api.ts";
import type { BitbucketState } from "./forges/bitbucket/api.ts";
import { raiseIncident, resolveIncident } from "./incidents.ts";
import type { BuildStatus } from "./builds/state-machine.ts";
import { statusSentence } from "./test-results/queries.ts";

export const REPORT_ATTEMPTS_BEFORE_INCIDENT = 5;
const MAX_BACKOFF_SECONDS = 600;
/** Builds older than this are no longer reported (the host has moved on). */
const REPORT_WINDOW_SECONDS = 24 * 3600;

const GITHUB_STATE: Record<BuildStatus, "pending" | "success" | "failure" | "error"> = { queued: "pending", running: "pending", succeeded: "success", failed: "failure", canceled: "error" };
const GITLAB_STATE: Record<BuildStatus, "pending" | "running" | "success" | "failed" | "canceled"> = { queued: "pending", running: "running", succeeded: "success", failed: "failed", canceled: "canceled" };
const GITEA_STATE: Record<BuildStatus, GiteaState> = { queued: "pending", running: "pending", succeeded: "success", failed: "failure", canceled: "error" };
const BITBUCKET_STATE: Record<BuildStatus, BitbucketState> = { queued: "INPROGRESS", running: "INPROGRESS", succeeded: "SUCCESSFUL", failed: "FAILED", canceled: "STOPPED" };

/** "Build #12 failed: 2 of 125 tests failed" once a finished build has test results (docs/test-results.md). */
function description(status: BuildStatus, number: number, tests: string | null): string {
  const text = { queued: `Build #${number} is queued`, running: `Build #${number} is running`, succeeded: `Build #${number} succeeded`, failed: `Build #${number} failed`, canceled: `Build #${number} was canceled` }[status];
  // GitHub keeps at most 140 characters of a description.
  return tests && (status === "succeeded" || status === "failed") ? `${text}: ${tests}`.slice(0, 140) : text;
}

function testsSentence(row: Record<string, unknown>): string | null {
  if (row.tests_total === null || row.tests_total === undefined) return null;
  const n = (k: string) => Number(row[k]);
  return statusSentence({ total: n("tests_total"), passed: n("tests_passed"), failed: n("tests_failed"), errored: n("tests_errored"), skipped: n("tests_skipped") });
}

export function backoffSeconds(attempts: number, random: () => number = Math.random): number {
  const base = Math.min(MAX_BACKOFF_SECONDS, 5 * 2 ** Math.max(0, attempts - 1));
  return Math.round(base * (0.75 + random() * 0.5));
}

export interface ReporterDeps extends ForgeDeps {
  db: Db;
  log: Logger;
  now: number;
  /** Base of the link in each status (ROOST_PUBLIC_URL, or the listening address). */
  baseUrl: string;
}

/** One pass: sends up to `limit` pending statuses; returns how many were sent. */
export async function reportCommitStatuses(deps: ReporterDeps, limit = 20): Promise<number> {
  const rows = await all(
    deps.db,
    `SELECT b.id, b.status, b.commit_sha, b.build_number, pl.name AS pipeline_name, r.provider, r.full_name, r.external_id, r.integration_id,
            c.attempts AS attempts, s.total AS tests_total, s.passed AS tests_passed, s.failed AS tests_failed, s.errored AS tests_errored, s.skipped AS tests_skipped
     FROM builds b
     JOIN pipelines pl ON pl.id = b.pipeline_id
     JOIN projects p ON p.id = b.project_id
     JOIN repositories r ON r.id = p.repository_id
     LEFT JOIN commit_status_reports c ON c.build_id = b.id
     LEFT JOIN build_test_summaries s ON s.build_id = b.id
     WHERE r.provider != 'git' AND (c.build_id IS NULL OR c.reported_status IS NOT b.status) AND COALESCE(c.next_attempt_at, 0) <= ? AND b.updated_at >= ?
     ORDER BY b.updated_at LIMIT ?`,
    [deps.now, deps.now - REPORT_WINDOW_SECONDS, limit],
  );
  let sent = 0;
  for (const row of rows) {
    const status = String(row.status) as BuildStatus;
    const integrationId = String(row.integration_id);
    try {
      const integration = await findIntegration(deps.db, integrationId);
      if (!integration) throw new Error("the repository's integration is gone");
      const targetUrl = `${deps.baseUrl}/v1/builds/${row.id}`;
      const context = `roost/${row.pipeline_name}`;
      if (row.provider === "github") {
        await (await githubClientFor(deps, integration)).createCommitStatus(String(row.full_name), String(row.commit_sha), { state: GITHUB_STATE[status], target_url: targetUrl, description: description(status, Number(row.build_number), testsSentence(row)), context });
      } else if (row.provider === "gitea") {
        await (await giteaClientFor(deps, integration)).createCommitStatus(String(row.full_name), String(row.commit_sha), { state: GITEA_STATE[status], target_url: targetUrl, description: description(status, Number(row.build_number), testsSentence(row)), context });
      } else if (row.provider === "bitbucket") {
        // Bitbucket keeps one status per `key` on a commit: the pipeline's context, as elsewhere.
        await (await bitbucketClientFor(deps, integration)).createCommitStatus(String(row.full_name), String(row.commit_sha), { state: BITBUCKET_STATE[status], key: context, name: context, url: targetUrl, description: description(status, Number(row.build_number), testsSentence(row)) });
      } else {
        await (await gitlabClientFor(deps, integration)).createCommitStatus(String(row.external_id), String(row.commit_sha), { state: GITLAB_STATE[status], target_url: targetUrl, description: description(status, Number(row.build_number), testsSentence(row)), name: context });
      }
      await deps.db.execute({
        sql: `INSERT INTO commit_status_reports (build_id, reported_status, attempts, next_attempt_at, last_error, updated_at) VALUES (?, ?, 0, 0, NULL, ?)
              ON CONFLICT (build_id) DO UPDATE SET reported_status = excluded.reported_status, attempts = 0, next_attempt_at = 0, last_error = NULL, updated_at = excluded.updated_at`,
        args: [String(row.id), status, deps.now],
      });
      await resolveIncident(deps.db, deps.now, "integration", integrationId, "commit_status_failed");
      sent++;
    } catch (error) {
      const attempts = Number(row.attempts ?? 0) + 1;
      const message = (error as Error).message;
      await deps.db.execute({
        sql: `INSERT INTO commit_status_reports (build_id, reported_status, attempts, next_attempt_at, last_error, updated_at) VALUES (?, NULL, ?, ?, ?, ?)
              ON CONFLICT (build_id) DO UPDATE SET attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at, last_error = excluded.last_error, updated_at = excluded.updated_at`,
        args: [String(row.id), attempts, deps.now + backoffSeconds(attempts), message, deps.now],
      });
      deps.log.warn("commit status not reported; will retry", { build_id: row.id, attempts, error: message });
      if (attempts >= REPORT_ATTEMPTS_BEFORE_INCIDENT) {
        await raiseIncident(deps.db, deps.now, {
          severity: "warning",
          reason: "commit_status_failed",
          message: `Commit statuses for ${row.full_name} cannot be reported: ${message}`,
          repair_action: "Check the integration's credentials and permissions (GitHub: commit statuses read/write; GitLab: api scope; Gitea: write:repository; Bitbucket: repository:write).",
          resource_kind: "integration",
          resource_id: integrationId,
          resource_name: String(row.full_name),
        });
      }
    }
  }
  return sent;
}
