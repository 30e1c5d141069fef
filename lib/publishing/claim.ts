// Runners and deployments (docs/publishing.md "Where a publish runs"): which runner may take
// which deployment, the claim (one write transaction, like a job's, lib/runners/jobs.ts), and what
// the runner receives. A runner takes a publish only when it says it can (its claim `accepts`
// publish), the build's pipeline could run on it (runner_labels), and, for App Store Connect, it
// is a macOS runner with Xcode (altool). Two publishes to one target never run at once: a Play
// edit or a TestFlight build of one app is one at a time. Host releases never reach a runner:
// the daemon holds the host's credentials and makes them itself (lib/publishing/host-release.ts).
import type { Db, Executor } from "../db/client.ts";
import { all, inTransaction, one } from "../db/client.ts";
import type { Runner } from "../runners/store.ts";
import { allLabels } from "../runners/store.ts";
import type { AppContext } from "../http/context.ts";
import { findBuild, type Build } from "../builds/store.ts";
import { buildIsTrusted, listVariables, refAllowed, revealVariable } from "../variables/variables.ts";
import { credentialNames, publisherName } from "./publishers.ts";
import { toDeployment, type Deployment } from "./deployments.ts";
import type { ClaimedPublish } from "./wire.ts";
import type { ConfigSnapshot } from "../pipelines/config.ts";

/** Null when the runner can run the deployment, else why not. */
export function whyRunnerCannotPublish(runner: Runner, d: Pick<Deployment, "publisher_type">, snapshot: ConfigSnapshot): string | null {
  if (d.publisher_type === "host_release") return "host releases are made by Roost itself";
  if (d.publisher_type === "app_store_connect" && (runner.capabilities.os !== "macos" || !runner.capabilities.xcode))
    return "an App Store Connect upload needs a macOS runner with Xcode (altool)";
  const has = new Set(allLabels(runner));
  const missing = (snapshot.execution_config.runner_labels ?? []).filter((l) => !has.has(l));
  return missing.length ? `no runner label ${missing.join(", ")}` : null;
}

export async function claimDeployment(db: Db, runner: Runner, claimId: string, now: number, leaseSeconds: number): Promise<Deployment | null> {
  return inTransaction(db, async (tx) => {
    const existing = await one(tx, "SELECT * FROM deployments WHERE runner_id = ? AND claim_id = ?", [runner.id, claimId]);
    if (existing) return toDeployment(existing);
    const candidates = await all(
      tx,
      `SELECT d.*, b.config_snapshot AS build_config_snapshot FROM deployments d JOIN builds b ON b.id = d.build_id
       WHERE d.status = 'approved' AND d.publisher_type != 'host_release'
         AND NOT EXISTS (SELECT 1 FROM deployments r WHERE r.status = 'running' AND r.project_id = d.project_id AND r.target = d.target)
       ORDER BY d.created_at, d.rowid LIMIT 50`,
    );
    for (const row of candidates) {
      const d = toDeployment(row);
      if (whyRunnerCannotPublish(runner, d, JSON.parse(String(row.build_config_snapshot)) as ConfigSnapshot) !== null) continue;
      const claimed = await one(
        tx,
        "UPDATE deployments SET status = 'running', runner_id = ?, claim_id = ?, lease_expires_at = ?, started_at = ?, updated_at = ? WHERE id = ? AND status = 'approved' RETURNING *",
        [runner.id, claimId, now + leaseSeconds, now, now, d.id],
      );
      if (claimed) return toDeployment(claimed);
    }
    return null;
  });
}

/**
 * A publish the runner claimed but never started (it was stopping) goes back to approved, for
 * any runner; false when it had started (it sent a log line) or was not this runner's.
 */
export async function releaseDeployment(db: Executor, id: string, runnerId: string, now: number): Promise<boolean> {
  const result = await db.execute({
    sql: "UPDATE deployments SET status = 'approved', runner_id = NULL, claim_id = NULL, lease_expires_at = NULL, started_at = NULL, updated_at = ? WHERE id = ? AND runner_id = ? AND status = 'running' AND next_line = 0",
    args: [now, id, runnerId],
  });
  return result.rowsAffected === 1;
}

/**
 * What the runner receives: the deployment, the build it publishes, and the environment's secrets
 * this publisher names, revealed. An environment's secrets reach only a publish to that
 * environment, of a build the project trusts (never a pull request or a fork's build, which never
 * get here: lib/publishing/plan.ts), honouring each secret's own protected_refs.
 */
export async function publishPayload(ctx: Pick<AppContext, "db" | "secrets" | "config">, d: Deployment): Promise<ClaimedPublish> {
  const build = (await findBuild(ctx.db, d.build_id))!;
  const wanted = credentialNames(d.publisher);
  const secrets: ClaimedPublish["secrets"] = [];
  if (d.environment_id && buildIsTrusted(build) && build.trigger_event !== "pull_request") {
    for (const v of await listVariables(ctx.db, d.project_id, null, d.environment_id)) {
      if (!wanted.includes(v.key) || !refAllowed(v, build)) continue;
      secrets.push({ key: v.key, value: await revealVariable(ctx.secrets, v), file: v.file });
    }
  }
  return {
    deployment_id: d.id,
    lease_seconds: ctx.config.runners.leaseSeconds,
    heartbeat_seconds: ctx.config.runners.heartbeatSeconds,
    next_line: d.next_line,
    step: `publish:${publisherName(d.publisher)}`.slice(0, 64),
    environment: d.environment_name,
    build: buildSummary(build),
    publisher: d.publisher,
    artifacts: d.artifacts,
    release_notes: d.release_notes,
    secrets,
    missing_secrets: wanted.filter((k) => !secrets.some((s) => s.key === k)),
  };
}

function buildSummary(build: Build): ClaimedPublish["build"] {
  const tag = build.trigger_event === "tag" ? ((build.context as { tag?: string } | null)?.tag ?? build.branch) : null;
  return {
    id: build.id,
    build_number: build.build_number,
    project_id: build.project_id,
    branch: build.branch,
    commit_sha: build.commit_sha,
    trigger_event: build.trigger_event,
    tag,
  };
}
