// Commit statuses back to the forges that have them (docs/webhooks.md "Commit statuses"; each
// forge's reportStatus, lib/forges/<forge>/index.ts; plain git remotes have none).
//
// What each host should show is kept in commit_status_outbox (schema.sql migration 24), one row per
// commit and pipeline holding the newest build's status, written in the same transaction as the
// build's change (lib/builds/what-follows.ts): nothing is lost on a crash, and only the latest state of a
// commit and pipeline is ever sent. A reporter in each daemon process sends as soon as a build of
// this process changes (and every 2 s for changes made by other processes and for retries):
//   1. it claims due rows in one transaction (claimed_by, claimed_until), so two processes never
//      send the same one;
//   2. sends them, up to PER_FORGE_IN_FLIGHT at a time per integration, any number of forges at once;
//   3. records each: sent (the version it sent; a change meanwhile leaves the row due), or failed
//      with its retry time: when the host's rate limit resets (Retry-After, x-ratelimit-*), or
//      exponential backoff with jitter; what was sent is written in batches while the next sends
//      go on. After REPORT_ATTEMPTS_BEFORE_INCIDENT consecutive failures
//      an operator incident names the integration. A failure never touches the build.
import type { Db } from "../db/client.ts";
import { all, one } from "../db/client.ts";
import type { Row } from "../db/database.ts";
import type { Logger } from "../daemon/log.ts";
import type { AppContext } from "../http/context.ts";
import { findIntegration, type Integration } from "../integrations/store.ts";
import type { ForgeDeps } from "./forge.ts";
import { ForgeApiError } from "./http.ts";
import { raiseIncident, resolveIncident } from "../daemon/incidents.ts";
import type { BuildStatus } from "../builds/state-machine.ts";
import { statusSentence } from "../test-results/queries.ts";
import { newId } from "../auth/secrets.ts";

export const REPORT_ATTEMPTS_BEFORE_INCIDENT = 5;
const MAX_BACKOFF_SECONDS = 600;
/** Statuses not sent within a day are dropped (the host has moved on), with what was sent. */
const REPORT_WINDOW_SECONDS = 24 * 3600;
/**
 * Requests in flight at once to one integration's forge. A sender busy with a webhook burst takes
 * its answers a turn of its event loop at a time (about 100 ms at load 18), so this bounds how many
 * statuses leave per turn: 8 fell behind a burst of 2,000 pushes (docs/benchmarks.md "Commit
 * statuses"). GitHub allows 100 concurrent requests per installation across its APIs
 * (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits).
 */
export const PER_FORGE_IN_FLIGHT = 32;
/** Rows one claim takes; a reporter claims again at once while rows are due. */
const CLAIM_BATCH = 200;
/** A claim not recorded within this long (its process died) is taken again. */
const CLAIM_SECONDS = 60;

/** "Build #12 failed: 2 of 125 tests failed" once a finished build has test results (docs/test-results.md). */
function description(status: BuildStatus, number: number, tests: string | null): string {
  const text = {
    queued: `Build #${number} is queued`,
    running: `Build #${number} is running`,
    succeeded: `Build #${number} succeeded`,
    failed: `Build #${number} failed`,
    canceled: `Build #${number} was canceled`,
  }[status];
  // GitHub keeps at most 140 characters of a description.
  return tests && (status === "succeeded" || status === "failed") ? `${text}: ${tests}`.slice(0, 140) : text;
}

function testsSentence(row: Row): string | null {
  if (row.tests_total === null || row.tests_total === undefined) return null;
  const n = (k: string) => Number(row[k]);
  return statusSentence({
    total: n("tests_total"),
    passed: n("tests_passed"),
    failed: n("tests_failed"),
    errored: n("tests_errored"),
    skipped: n("tests_skipped"),
  });
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
  /** Who claims (one id per reporter); a pass without one claims as itself. */
  claimer?: string;
}

/** A claimed row with what sending it needs. */
interface Due {
  key: [repositoryId: string, commitSha: string, pipelineId: string];
  version: number;
  attempts: number;
  status: BuildStatus;
  details: Row;
}

/**
 * One pass: claims up to `limit` due statuses, sends them (PER_FORGE_IN_FLIGHT at a time per integration)
 * and records the outcome; returns how many were sent.
 */
export async function reportCommitStatuses(deps: ReporterDeps, limit = CLAIM_BATCH): Promise<number> {
  return (await reportPass(deps, limit)).sent;
}

async function reportPass(deps: ReporterDeps, limit: number): Promise<{ claimed: number; sent: number }> {
  const claimer = deps.claimer ?? newId();
  const due = await claimDue(deps, claimer, limit);
  if (due.length === 0) return { claimed: 0, sent: 0 };
  const byIntegration = new Map<string, Due[]>();
  for (const d of due) {
    const id = String(d.details.integration_id ?? "");
    byIntegration.set(id, [...(byIntegration.get(id) ?? []), d]);
  }
  const sent = await Promise.all([...byIntegration].map(([integrationId, rows]) => sendToForge(deps, claimer, integrationId, rows)));
  return { claimed: due.length, sent: sent.reduce((a, b) => a + b, 0) };
}

async function claimDue(deps: ReporterDeps, claimer: string, limit: number): Promise<Due[]> {
  // Looked at first with a read of the due index: the claim is an UPDATE, which takes the write
  // lock even when it claims nothing, and most passes (every 2 s, on every daemon) find nothing.
  if (!(await one(deps.db, "SELECT 1 FROM commit_status_outbox WHERE version != sent_version AND next_attempt_at <= ? LIMIT 1", [deps.now]))) return [];
  // One statement, so one write transaction: the rows are this claimer's until recorded or CLAIM_SECONDS pass.
  const claimed = (
    await deps.db.execute({
      sql: `UPDATE commit_status_outbox SET claimed_by = ?, claimed_until = ?
            WHERE rowid IN (SELECT rowid FROM commit_status_outbox
              WHERE version != sent_version AND next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?) AND updated_at >= ?
              ORDER BY next_attempt_at LIMIT +?)
            RETURNING repository_id, commit_sha, pipeline_id, build_id, status, version, attempts`,
      args: [claimer, deps.now + CLAIM_SECONDS, deps.now, deps.now, deps.now - REPORT_WINDOW_SECONDS, limit],
    })
  ).rows;
  if (claimed.length === 0) return [];
  const ids = [...new Set(claimed.map((r) => String(r.build_id)))];
  const details = new Map<string, Row>();
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const rows = await all(
      deps.db,
      `SELECT b.id, b.commit_sha, b.build_number, pl.name AS pipeline_name, r.provider, r.full_name, r.external_id, r.integration_id,
              s.total AS tests_total, s.passed AS tests_passed, s.failed AS tests_failed, s.errored AS tests_errored, s.skipped AS tests_skipped
       FROM builds b JOIN pipelines pl ON pl.id = b.pipeline_id JOIN projects p ON p.id = b.project_id JOIN repositories r ON r.id = p.repository_id
       LEFT JOIN build_test_summaries s ON s.build_id = b.id
       WHERE b.id IN (${chunk.map(() => "?").join(", ")})`,
      chunk,
    );
    for (const row of rows) details.set(String(row.id), row);
  }
  return claimed.map((r) => ({
    key: [String(r.repository_id), String(r.commit_sha), String(r.pipeline_id)],
    version: Number(r.version),
    attempts: Number(r.attempts),
    status: String(r.status) as BuildStatus,
    details: details.get(String(r.build_id)) ?? { integration_id: null },
  }));
}

/**
 * Sends one integration's statuses, PER_FORGE_IN_FLIGHT at a time; stops early (leaving the rest
 * due) when the forge asks to wait. What each send did is recorded in batches, one write for every
 * outcome waiting, while the next sends go on: a sender never waits for the write queue between
 * two requests (a webhook burst holds it for a group commit at a time, which paced the statuses
 * to PER_FORGE_IN_FLIGHT per commit; docs/benchmarks.md "Commit statuses").
 */
async function sendToForge(deps: ReporterDeps, claimer: string, integrationId: string, rows: Due[]): Promise<number> {
  const integration = integrationId ? await findIntegration(deps.db, integrationId) : null;
  let sent = 0;
  let waitUntil: number | null = null;
  let failedOnce = false;
  const outcomes = outcomeRecorder(deps, claimer);
  const queue = [...rows];
  const worker = async () => {
    for (let row = queue.shift(); row; row = queue.shift()) {
      if (waitUntil !== null) {
        outcomes.add({ row, releasedUntil: waitUntil });
        continue;
      }
      try {
        if (!integration) throw new Error("the repository's integration is gone");
        await send(deps, integration, row);
        outcomes.add({ row, releasedUntil: null });
        sent++;
      } catch (error) {
        if (error instanceof ForgeApiError && error.retryAt !== null) {
          // The host's rate limit: not a failure of this status; everything for this host waits.
          waitUntil = Math.max(waitUntil ?? 0, error.retryAt);
          outcomes.add({ row, releasedUntil: error.retryAt });
          deps.log.warn("commit statuses wait for the host's rate limit", { integration_id: integrationId, until: error.retryAt });
        } else {
          failedOnce = true;
          await fail(deps, claimer, row, integrationId, error as Error);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PER_FORGE_IN_FLIGHT, rows.length) }, worker));
  await outcomes.settled();
  if (sent > 0 && !failedOnce && integrationId) await resolveIncident(deps.db, deps.now, "integration", integrationId, "commit_status_failed");
  return sent;
}

/** A claimed row sent (releasedUntil null), or not sent because the host asked to wait until then. */
interface Outcome {
  row: Due;
  releasedUntil: number | null;
}

/**
 * Records outcomes as they come: one write for everything added since the last one began, never
 * two at once. A claimed row stays this claimer's until its outcome is written, so no other
 * process sends it meanwhile.
 */
function outcomeRecorder(deps: ReporterDeps, claimer: string): { add(outcome: Outcome): void; settled(): Promise<void> } {
  let waiting: Outcome[] = [];
  let writing: Promise<void> | null = null;
  let failure: unknown = null;
  const write = () => {
    if (writing || waiting.length === 0) return;
    const batch = waiting;
    waiting = [];
    writing = recordOutcomes(deps, claimer, batch)
      .catch((error: unknown) => void (failure ??= error))
      .finally(() => {
        writing = null;
        write();
      });
  };
  return {
    add(outcome) {
      waiting.push(outcome);
      write();
    },
    async settled() {
      while (writing) await writing;
      if (failure) throw failure;
    },
  };
}

/**
 * Sent: the version it sent is what the host has (a newer change meanwhile leaves the row due).
 * Released: due again when the host said, with no attempt counted. One write transaction for all.
 */
async function recordOutcomes(deps: ReporterDeps, claimer: string, outcomes: Outcome[]): Promise<void> {
  await deps.db.batch(
    outcomes.map(({ row, releasedUntil }) =>
      releasedUntil === null
        ? {
            sql: `UPDATE commit_status_outbox SET sent_version = ?, attempts = 0, next_attempt_at = 0, last_error = NULL, claimed_by = NULL, claimed_until = NULL WHERE ${KEY}`,
            args: [row.version, ...row.key, claimer],
          }
        : {
            sql: `UPDATE commit_status_outbox SET next_attempt_at = ?, claimed_by = NULL, claimed_until = NULL WHERE ${KEY}`,
            args: [releasedUntil, ...row.key, claimer],
          },
    ),
    "write",
  );
}

/** Through the repository's forge; a forge without commit statuses (none has rows: the outbox leaves plain git out) sends nothing. */
async function send(deps: ReporterDeps, integration: Integration, row: Due): Promise<void> {
  const d = row.details;
  const report = (await forges()).forgeOf({ provider: String(d.provider) }).reportStatus;
  if (!report) return;
  await report(
    deps,
    integration,
    { external_id: String(d.external_id), full_name: String(d.full_name) },
    {
      status: row.status,
      sha: String(d.commit_sha),
      url: `${deps.baseUrl}/v1/builds/${d.id}`,
      description: description(row.status, Number(d.build_number), testsSentence(d)),
      context: `roost/${d.pipeline_name}`,
    },
  );
}

/**
 * The forges (their payload schemas among them) load with the first status sent, not with the
 * daemon (issue 20); the module is kept, not imported again for every status (an import of a
 * loaded module still cost 1 % of a daemon's CPU under webhook pushes).
 */
let registry: Promise<typeof import("./registry.ts")> | null = null;
function forges(): Promise<typeof import("./registry.ts")> {
  return (registry ??= import("./registry.ts"));
}

const KEY = "repository_id = ? AND commit_sha = ? AND pipeline_id = ? AND claimed_by = ?";

async function fail(deps: ReporterDeps, claimer: string, row: Due, integrationId: string, error: Error): Promise<void> {
  const attempts = row.attempts + 1;
  await deps.db.execute({
    sql: `UPDATE commit_status_outbox SET attempts = ?, next_attempt_at = ?, last_error = ?, claimed_by = NULL, claimed_until = NULL WHERE ${KEY}`,
    args: [attempts, deps.now + backoffSeconds(attempts), error.message, ...row.key, claimer],
  });
  deps.log.warn("commit status not reported; will retry", { build_id: row.details.id, attempts, error: error.message });
  if (attempts >= REPORT_ATTEMPTS_BEFORE_INCIDENT && integrationId) {
    await raiseIncident(deps.db, deps.now, {
      severity: "warning",
      reason: "commit_status_failed",
      message: `Commit statuses for ${row.details.full_name} cannot be reported: ${error.message}`,
      repair_action:
        "Check the integration's credentials and permissions (GitHub: commit statuses read/write; GitLab: api scope; Gitea: write:repository; Bitbucket: repository:write).",
      resource_kind: "integration",
      resource_id: integrationId,
      resource_name: String(row.details.full_name),
    });
  }
}

/** Housekeeping: forgets statuses older than the report window, sent or not. */
export async function pruneCommitStatuses(db: Db, now: number): Promise<number> {
  return (await db.execute({ sql: "DELETE FROM commit_status_outbox WHERE updated_at < ?", args: [now - REPORT_WINDOW_SECONDS] })).rowsAffected;
}

/**
 * This process's reporter: a pass as soon as a build of this process changes, and every
 * `passEveryMs` (2 s: other processes' changes, retries); one pass at a time, another right after
 * while statuses are due.
 */
export function startCommitStatusReporter(
  ctx: Pick<AppContext, "db" | "secrets" | "config" | "clock" | "log" | "events">,
  baseUrl: string,
  passEveryMs = 2000,
): () => Promise<void> {
  const claimer = newId();
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  const wake = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        try {
          const pass = await reportPass(
            { db: ctx.db, secrets: ctx.secrets, config: ctx.config, clock: ctx.clock, log: ctx.log, now: ctx.clock.now(), baseUrl, claimer },
            CLAIM_BATCH,
          );
          if (pass.claimed >= CLAIM_BATCH) again = true;
        } catch (error) {
          ctx.log.error("commit status pass failed", { error });
        }
      } while (again && !stopped);
    })().finally(() => (running = null));
  };
  const unsubscribe = ctx.events.subscribe((e) => {
    if (e.type === "build.changed" || e.type === "build.queued") wake();
  });
  const timer = setInterval(wake, passEveryMs);
  return async () => {
    stopped = true;
    clearInterval(timer);
    unsubscribe();
    await running;
  };
}
