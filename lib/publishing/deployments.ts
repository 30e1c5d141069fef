// Deployments (docs/publishing.md "Deployments"): one publish of one build's artifacts by one
// publisher to one environment, from its request through a person's decision (when the
// environment requires one) to the runner's run and the store's answer. Status changes are
// single guarded UPDATEs (… WHERE status = <the state it leaves>), so two approvers, two
// runners or two daemon processes can never both move one deployment.
//
//   waiting_approval ──approve──▶ approved ──claim──▶ running ──▶ succeeded | failed
//          └──────reject──▶ rejected                     (a lost runner: failed)
// A deployment that needs no approval is created approved; one that may not run at all (no
// such environment, a ref the environment refuses, no artifact) is created failed, with why.
import { z } from "zod";
import type { Executor, Row, SqlCondition, Statement } from "../db/client.ts";
import { ALWAYS, all, json, num, numOrNull, one, readInPieces, rowMapper, str, strAs, strOrNull } from "../db/client.ts";
import type { Publisher } from "./publishers.ts";
import { DeploymentArtifact, StoreAnswer } from "./wire.ts";

export { DeploymentArtifact, StoreAnswer };

export const DEPLOYMENT_STATUSES = ["waiting_approval", "approved", "rejected", "running", "succeeded", "failed"] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];
export const DEPLOYMENT_TRIGGERS = ["build", "promotion", "retry"] as const;

/** Release notes resolved when the deployment is created, per language; a notes file is read by the runner. */
export type ReleaseNotes = Record<string, string>;

/** One deployment (table deployments). */
export const toDeployment = rowMapper({
  id: str,
  project_id: str,
  build_id: str,
  environment_id: strOrNull,
  environment_name: str,
  publisher_name: str,
  publisher_type: strAs<Publisher["type"]>(),
  publisher: json<Publisher>(),
  target: str,
  trigger: strAs<(typeof DEPLOYMENT_TRIGGERS)[number]>(),
  retry_of: strOrNull,
  status: strAs<DeploymentStatus>(),
  requested_by: strOrNull,
  requested_by_email: str,
  decided_by: strOrNull,
  decided_by_email: strOrNull,
  decided_at: numOrNull,
  artifacts: json<DeploymentArtifact[]>(),
  release_notes: json<ReleaseNotes>(),
  store_answer: (row, column) => {
    const answer = strOrNull(row, column);
    return answer ? (JSON.parse(answer) as StoreAnswer) : null;
  },
  failure_reason: strOrNull,
  runner_id: strOrNull,
  claim_id: strOrNull,
  lease_expires_at: numOrNull,
  next_line: num,
  created_at: num,
  updated_at: num,
  started_at: numOrNull,
  finished_at: numOrNull,
});
export type Deployment = ReturnType<typeof toDeployment>;

export const DeploymentResource = z.object({
  id: z.string(),
  project_id: z.string(),
  build_id: z.string(),
  build_number: z.number().int(),
  commit_sha: z.string(),
  branch: z.string().describe("the build's branch, or its tag for a tag build"),
  environment: z.string(),
  publisher: z.string().describe("the publisher's name"),
  publisher_type: z.string(),
  target: z.string().describe("where it lands: a package and track, a Firebase app, an App Store app's TestFlight, a host's releases"),
  config: z.record(z.string(), z.unknown()).describe("the publisher's configuration as frozen (it holds secret names, never secrets)"),
  trigger: z.enum(DEPLOYMENT_TRIGGERS),
  retry_of: z.string().nullable(),
  status: z.enum(DEPLOYMENT_STATUSES),
  requested_by: z.string().describe("who asked for it: the e-mail of whoever promoted or retried it, or the build's trigger"),
  decided_by: z.string().nullable().describe("the e-mail of who approved or rejected it"),
  decided_at: z.number().int().nullable(),
  artifacts: z.array(DeploymentArtifact),
  release_notes: z.record(z.string(), z.string()).describe("per language, as resolved when it was created (a notes file is read at publish time)"),
  store_answer: StoreAnswer.nullable(),
  failure_reason: z.string().nullable(),
  runner_id: z.string().nullable(),
  created_at: z.number().int(),
  updated_at: z.number().int(),
  started_at: z.number().int().nullable(),
  finished_at: z.number().int().nullable(),
});
export type DeploymentResource = z.output<typeof DeploymentResource>;

const SELECT = "SELECT d.*, b.build_number, b.commit_sha, b.branch FROM deployments d JOIN builds b ON b.id = d.build_id";

function toResource(row: Row): DeploymentResource {
  const d = toDeployment(row);
  return {
    id: d.id,
    project_id: d.project_id,
    build_id: d.build_id,
    build_number: num(row, "build_number"),
    commit_sha: str(row, "commit_sha"),
    branch: str(row, "branch"),
    environment: d.environment_name,
    publisher: d.publisher_name,
    publisher_type: d.publisher_type,
    target: d.target,
    config: d.publisher as unknown as Record<string, unknown>,
    trigger: d.trigger,
    retry_of: d.retry_of,
    status: d.status,
    requested_by: d.requested_by_email,
    decided_by: d.decided_by_email,
    decided_at: d.decided_at,
    artifacts: d.artifacts,
    release_notes: d.release_notes,
    store_answer: d.store_answer,
    failure_reason: d.failure_reason,
    runner_id: d.runner_id,
    created_at: d.created_at,
    updated_at: d.updated_at,
    started_at: d.started_at,
    finished_at: d.finished_at,
  };
}

export async function findDeployment(db: Executor, id: string): Promise<Deployment | null> {
  const row = await one(db, "SELECT * FROM deployments WHERE id = ?", [id]);
  return row ? toDeployment(row) : null;
}

export async function deploymentResource(db: Executor, id: string): Promise<DeploymentResource | null> {
  const row = await one(db, `${SELECT} WHERE d.id = +?`, [id]);
  return row ? toResource(row) : null;
}

export interface DeploymentFilter {
  projectId: string;
  buildId?: string | undefined;
  environment?: string | undefined;
  status?: DeploymentStatus | undefined;
  limit: number;
  offset: number;
}

/**
 * Newest first. A deployment carries its publisher's configuration and release notes (from a
 * pipeline file up to 256 KiB) and the store's answer, so a page of 200 can pass what a libSQL
 * server answers at once (10 MB): then the rest of the page is read in smaller requests, each
 * after the last deployment read (not by offset, so a deployment made meanwhile moves nothing).
 */
export async function listDeployments(db: Executor, f: DeploymentFilter): Promise<DeploymentResource[]> {
  const where = ["d.project_id = +?"];
  const args: (string | number)[] = [f.projectId];
  if (f.buildId) where.push("d.build_id = +?"), args.push(f.buildId);
  if (f.environment) where.push("d.environment_name = +?"), args.push(f.environment);
  if (f.status) where.push("d.status = +?"), args.push(f.status);
  const rows = await readInPieces(f.limit, (count, last: Row | undefined) =>
    last
      ? all(
          db,
          `${SELECT_LISTED} WHERE ${where.join(" AND ")} AND (d.created_at < ? OR (d.created_at = +? AND d.rowid < ?)) ORDER BY d.created_at DESC, d.rowid DESC LIMIT +?`,
          [...args, num(last, "created_at"), num(last, "created_at"), num(last, "listed_rowid"), count],
        )
      : all(db, `${SELECT_LISTED} WHERE ${where.join(" AND ")} ORDER BY d.created_at DESC, d.rowid DESC LIMIT +? OFFSET +?`, [...args, count, f.offset]),
  );
  return rows.map(toResource);
}

const SELECT_LISTED = "SELECT d.*, d.rowid AS listed_rowid, b.build_number, b.commit_sha, b.branch FROM deployments d JOIN builds b ON b.id = d.build_id";

export const CurrentVersion = z.object({
  environment: z.string(),
  target: z.string(),
  publisher: z.string(),
  deployment_id: z.string(),
  build_id: z.string(),
  build_number: z.number().int(),
  commit_sha: z.string(),
  version: z.string().nullable(),
  summary: z.string(),
  published_at: z.number().int(),
});

/** What each environment's targets hold now: the newest succeeded deployment per environment and target. */
export async function currentVersions(db: Executor, projectId: string): Promise<z.output<typeof CurrentVersion>[]> {
  const rows = await all(
    db,
    `${SELECT} WHERE d.project_id = +? AND d.status = 'succeeded' AND d.rowid = (
       SELECT d2.rowid FROM deployments d2 WHERE d2.project_id = d.project_id AND d2.environment_name = d.environment_name AND d2.target = d.target AND d2.status = 'succeeded'
       ORDER BY d2.finished_at DESC, d2.rowid DESC LIMIT 1)
     ORDER BY d.environment_name, d.target`,
    [projectId],
  );
  return rows.map((row) => {
    const d = toResource(row);
    return {
      environment: d.environment,
      target: d.target,
      publisher: d.publisher,
      deployment_id: d.id,
      build_id: d.build_id,
      build_number: d.build_number,
      commit_sha: d.commit_sha,
      version: d.store_answer?.version ?? null,
      summary: d.store_answer?.summary ?? "",
      published_at: d.finished_at ?? d.updated_at,
    };
  });
}

export interface NewDeployment {
  id: string;
  project_id: string;
  build_id: string;
  environment_id: string | null;
  environment_name: string;
  publisher_name: string;
  publisher: Publisher;
  target: string;
  trigger: Deployment["trigger"];
  retry_of: string | null;
  status: "waiting_approval" | "approved" | "failed";
  requested_by: string | null;
  requested_by_email: string;
  artifacts: DeploymentArtifact[];
  release_notes: ReleaseNotes;
  failure_reason: string | null;
}

/** A new deployment's INSERT, for a batch: written only where `when` holds, RETURNING the deployment. */
export function deploymentInserted(d: NewDeployment, now: number, when: SqlCondition = ALWAYS): Statement {
  return {
    sql: `INSERT INTO deployments (id, project_id, build_id, environment_id, environment_name, publisher_name, publisher_type, publisher, target, trigger, retry_of, status,
       requested_by, requested_by_email, artifacts, release_notes, failure_reason, created_at, updated_at, finished_at)
     SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE ${when.sql} RETURNING *`,
    args: [
      d.id,
      d.project_id,
      d.build_id,
      d.environment_id,
      d.environment_name,
      d.publisher_name,
      d.publisher.type,
      JSON.stringify(d.publisher),
      d.target,
      d.trigger,
      d.retry_of,
      d.status,
      d.requested_by,
      d.requested_by_email,
      JSON.stringify(d.artifacts),
      JSON.stringify(d.release_notes),
      d.failure_reason,
      now,
      now,
      d.status === "failed" ? now : null,
      ...when.args,
    ],
  };
}

/** Approves or rejects a waiting deployment; null when it was not waiting (decided already, or never needed a decision). */
export async function decideDeployment(
  db: Executor,
  id: string,
  decision: "approved" | "rejected",
  actor: { id: string; email: string },
  now: number,
): Promise<Deployment | null> {
  const row = await one(
    db,
    `UPDATE deployments SET status = ?, decided_by = ?, decided_by_email = ?, decided_at = ?, updated_at = ?, finished_at = CASE WHEN ? = 'rejected' THEN ? ELSE NULL END
     WHERE id = ? AND status = 'waiting_approval' RETURNING *`,
    [decision, actor.id, actor.email, now, now, decision, now, id],
  );
  return row ? toDeployment(row) : null;
}

/** The runner's answer at the end of a publish; null when the deployment was no longer running on this runner. */
export async function finishDeployment(
  db: Executor,
  id: string,
  runnerId: string,
  outcome: { status: "succeeded" | "failed"; store_answer: StoreAnswer | null; failure_reason: string | null },
  now: number,
): Promise<Deployment | null> {
  const row = await one(
    db,
    `UPDATE deployments SET status = ?, store_answer = ?, failure_reason = ?, finished_at = ?, updated_at = ?, lease_expires_at = NULL
     WHERE id = ? AND runner_id = ? AND status = 'running' RETURNING *`,
    [outcome.status, outcome.store_answer ? JSON.stringify(outcome.store_answer) : null, outcome.failure_reason, now, now, id, runnerId],
  );
  return row ? toDeployment(row) : null;
}

/** Renews a running deployment's lease; false when it is no longer this runner's to run. */
export async function renewDeploymentLease(db: Executor, id: string, runnerId: string, now: number, leaseSeconds: number): Promise<boolean> {
  const result = await db.execute({
    sql: "UPDATE deployments SET lease_expires_at = ? WHERE id = ? AND runner_id = ? AND status = 'running'",
    args: [now + leaseSeconds, id, runnerId],
  });
  return result.rowsAffected === 1;
}

/** A lost runner's deployment fails; null when it had moved on. */
export async function loseDeployment(db: Executor, id: string, reason: string, now: number): Promise<Deployment | null> {
  const row = await one(
    db,
    "UPDATE deployments SET status = 'failed', failure_reason = ?, finished_at = ?, updated_at = ?, lease_expires_at = NULL WHERE id = ? AND status = 'running' RETURNING *",
    [reason, now, now, id],
  );
  return row ? toDeployment(row) : null;
}

/** The build this publisher last published to this environment (its build number), for release notes from commits. */
export async function lastPublishedBuildNumber(
  db: Executor,
  projectId: string,
  environmentName: string,
  publisherName: string,
  beforeBuildNumber: number,
): Promise<number | null> {
  const row = await one(
    db,
    `SELECT MAX(b.build_number) AS n FROM deployments d JOIN builds b ON b.id = d.build_id
     WHERE d.project_id = +? AND d.environment_name = +? AND d.publisher_name = +? AND d.status = 'succeeded' AND b.build_number < ?`,
    [projectId, environmentName, publisherName, beforeBuildNumber],
  );
  return row && row.n !== null ? Number(row.n) : null;
}
