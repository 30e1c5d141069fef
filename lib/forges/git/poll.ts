// Polling plain git remotes (docs/any-git.md "Polling"): every ROOST_GIT_POLL_INTERVAL_SECONDS each
// repository a project builds is read with git ls-remote, and every branch or tag that moved since
// the last poll is handed to the same trigger evaluation and delivery log as a webhook delivery.
// Several daemon processes may run this side by side: a process polls a repository only after
// taking its lease row (schema.sql git_polls) in one conditional UPDATE, so each repository is
// polled by one process at a time. The lease is short and renewed while the poll runs, so a
// process killed mid-poll holds the repository up for about two poll intervals at most; the next
// poll then compares against the heads last recorded, and the newest head of each moved ref builds.
// Connecting a repository (creating the project that builds it) records its heads: only later
// changes build. Errors push the next poll back exponentially (up to an hour) and raise an
// operator incident after POLL_FAILURES_BEFORE_INCIDENT in a row.
import type { AppContext } from "../../http/context.ts";
import { all, one } from "../../db/client.ts";
import { findIntegration } from "../../integrations/store.ts";
import { findRepository, type Repository } from "../../integrations/repositories.ts";
import { openCredentials } from "../../integrations/credentials.ts";
import { lsRemote, type GitCredentials } from "./remote.ts";
import { ForgeApiError } from "../http.ts";
import type { DeliveryResult } from "../../webhooks/deliveries.ts";
import { raiseIncident, resolveIncident } from "../../daemon/incidents.ts";
import { newId } from "../../auth/secrets.ts";
import { boundedEvent } from "../event.ts";

export type PollDeps = Pick<AppContext, "db" | "secrets" | "config" | "clock" | "events" | "log">;

/**
 * How long a lease holds without renewal: two poll intervals, at least 3 s (the clock counts whole
 * seconds) and at most 30 s. The holder renews it three times per lease while its poll runs
 * (ls-remote may take up to 30 s), so a live poll is not taken over and a dead holder's lease
 * lapses within this.
 */
export function pollLeaseSeconds(interval: number): number {
  return Math.min(30, Math.max(3, 2 * interval));
}
export const POLL_FAILURES_BEFORE_INCIDENT = 3;
const MAX_BACKOFF_SECONDS = 3600;
export const POLL_FAILED = "git_poll_failed";

/** The wait before the next poll after `failures` consecutive errors (none: the interval). */
export function pollDelaySeconds(interval: number, failures: number): number {
  return failures === 0 ? interval : Math.min(MAX_BACKOFF_SECONDS, interval * 2 ** failures);
}

/** One pass: takes every due repository no other process holds and polls it. Returns how many this process polled. */
export async function pollGitRemotes(deps: PollDeps, owner: string = newId()): Promise<number> {
  const now = deps.clock.now();
  // Every repository a project builds through a plain git integration has a row; rows of unlinked
  // repositories go with them (ON DELETE CASCADE) or stay idle. Written only when one is missing:
  // an INSERT takes the write lock even when it inserts nothing, and this runs every few seconds
  // on every daemon.
  const repositories = `FROM repositories r JOIN projects p ON p.repository_id = r.id AND p.unlinked_at IS NULL
    WHERE r.provider = 'git' AND NOT EXISTS (SELECT 1 FROM git_polls g WHERE g.repository_id = r.id)`;
  if (await one(deps.db, `SELECT 1 ${repositories} LIMIT 1`))
    await deps.db.execute({ sql: `INSERT INTO git_polls (repository_id) SELECT r.id ${repositories} ON CONFLICT (repository_id) DO NOTHING` });
  const due = await all(deps.db, "SELECT repository_id FROM git_polls WHERE next_poll_at <= ? AND lease_until <= ? ORDER BY next_poll_at LIMIT 20", [now, now]);
  const lease = pollLeaseSeconds(deps.config.integrations.gitPollIntervalSeconds);
  let polled = 0;
  for (const row of due) {
    const repositoryId = String(row.repository_id);
    const taken = await deps.db.execute({
      sql: "UPDATE git_polls SET lease_owner = ?, lease_until = ? WHERE repository_id = ? AND next_poll_at <= ? AND lease_until <= ?",
      args: [owner, now + lease, repositoryId, now, now],
    });
    if (taken.rowsAffected !== 1) continue; // another process took it first
    const renewal = setInterval(
      () => {
        deps.db
          .execute({
            sql: "UPDATE git_polls SET lease_until = ? WHERE repository_id = ? AND lease_owner = ?",
            args: [deps.clock.now() + lease, repositoryId, owner],
          })
          .catch((error) => deps.log.warn("git poll lease renewal failed", { repository_id: repositoryId, error }));
      },
      (lease * 1000) / 3,
    );
    try {
      await pollOne(deps, repositoryId, owner);
    } finally {
      clearInterval(renewal);
    }
    polled++;
  }
  return polled;
}

/**
 * Connecting a repository (a project now builds it) records its heads, so only later changes
 * build: the commits already there were built by hand or not meant to be. When the remote cannot
 * be read now, the heads are forgotten instead, and the first poll records them without building.
 */
export async function recordConnectedHeads(deps: PollDeps, repository: Repository): Promise<void> {
  if (repository.provider !== "git") return;
  const now = deps.clock.now();
  let heads: string | null = null;
  try {
    const integration = await findIntegration(deps.db, repository.integration_id);
    if (integration)
      heads = JSON.stringify(Object.fromEntries((await lsRemote(integration.api_url, await openCredentials<GitCredentials>(deps.secrets, integration))).refs));
  } catch (error) {
    deps.log.warn("git heads not recorded on connect; the first poll records them", {
      repository_id: repository.id,
      error: error instanceof ForgeApiError ? error.message : String(error),
    });
  }
  await deps.db.execute({
    sql: `INSERT INTO git_polls (repository_id, heads, next_poll_at, failures, last_error, last_polled_at) VALUES (?, ?, ?, 0, NULL, ?)
          ON CONFLICT (repository_id) DO UPDATE SET heads = excluded.heads, next_poll_at = excluded.next_poll_at, failures = 0, last_error = NULL, last_polled_at = excluded.last_polled_at`,
    args: [repository.id, heads, heads === null ? 0 : now + deps.config.integrations.gitPollIntervalSeconds, heads === null ? null : now],
  });
}

async function pollOne(deps: PollDeps, repositoryId: string, owner: string): Promise<void> {
  const repository = await findRepository(deps.db, repositoryId);
  const integration = repository ? await findIntegration(deps.db, repository.integration_id) : null;
  const state = await one(deps.db, "SELECT heads, failures FROM git_polls WHERE repository_id = ?", [repositoryId]);
  const interval = deps.config.integrations.gitPollIntervalSeconds;
  if (!repository || !integration || !state) return;
  const now = deps.clock.now();
  try {
    const credentials = await openCredentials<GitCredentials>(deps.secrets, integration);
    const heads = await lsRemote(integration.api_url, credentials);
    const previous = typeof state.heads === "string" ? (JSON.parse(state.heads) as Record<string, string>) : null;
    const recorded = Object.fromEntries(heads.refs);
    for (const moved of movedRefs(previous, heads.refs)) {
      const result = await triggerFromPoll(deps, repository, moved.ref, moved.before, moved.after);
      // A delivery Roost could not act on (lib/webhooks/failed-deliveries.ts) keeps the ref's previous head, so the next poll tries it again.
      if (result === "failed") {
        if (moved.before) recorded[moved.ref] = moved.before;
        else delete recorded[moved.ref];
      }
    }
    await deps.db.execute({
      sql: `UPDATE git_polls SET heads = ?, failures = 0, last_error = NULL, last_polled_at = ?, next_poll_at = ?, lease_owner = NULL, lease_until = 0
            WHERE repository_id = ? AND lease_owner = ?`,
      args: [JSON.stringify(recorded), now, now + interval, repositoryId, owner],
    });
    await resolveIncident(deps.db, now, "repository", repositoryId, POLL_FAILED);
  } catch (error) {
    const failures = Number(state.failures ?? 0) + 1;
    const message = error instanceof ForgeApiError ? error.message : "the poll failed: the remote's answer was not what Roost expected";
    await deps.db.execute({
      sql: "UPDATE git_polls SET failures = ?, last_error = ?, last_polled_at = ?, next_poll_at = ?, lease_owner = NULL, lease_until = 0 WHERE repository_id = ? AND lease_owner = ?",
      args: [failures, message, now, now + pollDelaySeconds(interval, failures), repositoryId, owner],
    });
    deps.log.warn("git poll failed; will retry", { repository_id: repositoryId, failures, error: message });
    if (failures >= POLL_FAILURES_BEFORE_INCIDENT) {
      await raiseIncident(deps.db, now, {
        severity: "warning",
        reason: POLL_FAILED,
        message: `${repository.full_name} cannot be polled: ${message}`,
        repair_action: "Check the git integration's URL and credentials (git ls-remote must work from the daemon's host); polling retries with backoff.",
        resource_kind: "repository",
        resource_id: repositoryId,
        resource_name: repository.full_name,
      });
    }
  }
}

/**
 * The refs to build: every branch or tag that is new or points elsewhere than in the heads last
 * recorded. Without recorded heads (the remote could not be read when the repository was
 * connected), this poll only records them. Deleted refs build nothing.
 */
export function movedRefs(previous: Record<string, string> | null, current: Map<string, string>): { ref: string; before: string; after: string }[] {
  if (previous === null) return [];
  const out: { ref: string; before: string; after: string }[] = [];
  for (const [ref, sha] of current) if (previous[ref] !== sha) out.push({ ref, before: previous[ref] ?? "", after: sha });
  return out;
}

async function triggerFromPoll(deps: PollDeps, repository: Repository, ref: string, before: string, after: string): Promise<DeliveryResult> {
  // A delivery's evaluation (the pipeline file, its YAML parser, build creation) loads with the
  // first ref that moved, not with the first poll of an idle daemon (docs/benchmarks.md, "idle RSS").
  const [{ refKey, refMoved }, { acceptDelivery }] = await Promise.all([import("./parse.ts"), import("../../webhooks/accept.ts")]);
  // A remote's ref names have no length limit Roost can rely on: the limits of a webhook delivery
  // (boundedEvent, docs/webhooks.md "Limits") apply, so a branch or tag over its limit is logged
  // as ignored with the reason, its names cut, and builds nothing.
  const event = boundedEvent(
    refMoved({
      repository: { id: repository.external_id, fullName: repository.full_name },
      event: ref.startsWith("refs/tags/") ? "tag" : "push",
      action: "poll",
      ref,
      after,
      actor: "",
      message: "",
    }),
  );
  // The ref at its new commit is the identity, shared with the push webhook (handlers/webhooks/git.ts):
  // a push the webhook already built, or a move a second process saw after a lapsed lease, is
  // recorded as a duplicate and builds nothing. Both name the ref as bounded (cut past REF_CHARS).
  const accepted = await acceptDelivery(deps, {
    forge: "git",
    deliveryId: `poll:${event.ref}@${after.slice(0, 12)}`,
    dedupeKeys: [refKey(repository.id, event.ref, after)],
    event,
    repository,
    body: JSON.stringify({ ref, before, after, source: "poll" }),
  });
  return accepted.result;
}
