// Shared steps of the runner protocol (docs/runners.md).
import type { AppContext, RequestContext, RunnerContext } from "../http/context.ts";
import { fail } from "../http/errors.ts";
import { findJob, findJobWithBuildStatus, type Job, type ReadsOfBuild } from "./jobs.ts";
import type { Build } from "../builds/store.ts";
import { repositoryOfBuild, toRepositoryOfBuild } from "../integrations/repositories.ts";
import { revealEnv, type ConfigSnapshot } from "../pipelines/config.ts";
import { normalizeExecutionConfig } from "../pipelines/snapshot.ts";
import { findIntegration, integrationOfBuild, toIntegrationOfBuild, type Integration } from "../integrations/store.ts";
import type { CloneCredentials, ForgeDeps } from "../forges/forge.ts";
import { forgeOf } from "../forges/registry.ts";
import type { Repository } from "../integrations/repositories.ts";
import { takeRegistryAuth, toVariablesOfBuild, variablesForBuild, variablesOfBuild } from "../variables/variables.ts";
import type { Row } from "../db/client.ts";

/**
 * Fencing: the job must be this runner's and still running. Another runner's job is 409
 * job_not_assigned; a finished or lost job is 410 job_finished (the runner stops working on it).
 */
export async function ownedRunningJob(ctx: RunnerContext, jobId: string): Promise<Job> {
  return fenced(ctx, await findJob(ctx.db, jobId));
}

/**
 * ownedRunningJob, and the X-Roost-Job-Status header its answer carries (whether the build still
 * runs or is being canceled), read in one statement: on a remote database each read is a round
 * trip, and a log append is the runner's most frequent request.
 */
export async function ownedRunningJobWithStatus(
  ctx: RunnerContext,
  jobId: string,
  read: Promise<Awaited<ReturnType<typeof findJobWithBuildStatus>>> = findJobWithBuildStatus(ctx.db, jobId),
): Promise<{ job: Job; status: Record<string, string> }> {
  const row = await read;
  return { job: fenced(ctx, row?.job ?? null), status: { "x-roost-job-status": row?.buildStatus === "running" ? "running" : "canceling" } };
}

function fenced(ctx: RunnerContext, job: Job | null): Job {
  if (!job || job.runner_id !== ctx.runner.id) fail("job_not_assigned");
  if (job.status !== "running") fail("job_finished", `This job is ${job.status === "lost" ? "lost (its lease expired)" : "finished"}; stop working on it.`);
  return job;
}

/**
 * What a job's payload reads besides its build: the repository with its project's default
 * branch, the integration, and the project's and pipeline's variables. A claim reads them in its
 * write batch (claimJob); variables are read when the job is claimed, not frozen with the build,
 * so a re-run after a rotated password uses the new one.
 */
export const jobPayloadReads: ReadsOfBuild = (build) => [repositoryOfBuild(build), integrationOfBuild(build), variablesOfBuild(build)];

/**
 * What a runner receives with a claimed job: the build, where to fetch it, and its frozen
 * configuration with secrets revealed (secrets only reach builds the project trusts). `read` is
 * what jobPayloadReads read in the claim's batch; for a job claimed earlier they are read here,
 * side by side (on a remote database one request).
 */
export async function jobPayload(ctx: RequestContext, job: Job, build: Build, read: Row[][] | null) {
  const frozen: ConfigSnapshot = build.config_snapshot;
  const snapshot: ConfigSnapshot = { ...frozen, execution_config: withNotesFiles(normalizeExecutionConfig(frozen.execution_config)) };
  const [repositoryRows, integrationRows, variableRows] =
    read ?? (await Promise.all(jobPayloadReads({ sql: "+?", args: [build.id] }).map(async (statement) => (await ctx.db.execute(statement)).rows)));
  const ofProject = toRepositoryOfBuild(repositoryRows![0]);
  const integration = toIntegrationOfBuild(integrationRows![0]);
  const variables = await variablesForBuild(ctx.secrets, build, revealEnv(snapshot.execution_config.env, ctx.secrets), toVariablesOfBuild(variableRows!));
  const repo = ofProject?.repository ?? null;
  const registry = takeRegistryAuth(variables, snapshot.execution_config.registry_credentials);
  return {
    job_id: job.id,
    lease_seconds: ctx.config.runners.leaseSeconds,
    heartbeat_seconds: ctx.config.runners.heartbeatSeconds,
    next_line: job.next_line,
    build: {
      id: build.id,
      build_number: build.build_number,
      project_id: build.project_id,
      pipeline_id: build.pipeline_id,
      branch: build.branch,
      commit_sha: build.commit_sha,
      trigger_type: build.trigger_type,
      trigger_event: build.trigger_event,
      trigger_ref: build.trigger_ref,
      repository_full_name: repo?.full_name ?? "",
      clone_url: repo?.clone_url ?? "",
      default_branch: ofProject?.projectDefaultBranch ?? "",
    },
    clone_credentials: repo ? await cloneCredentials(ctx, repo, integration) : null,
    config: { ...snapshot, execution_config: { ...snapshot.execution_config, env: variables.env } },
    files: variables.files,
    withheld_secrets: variables.withheld,
    withheld_reason: variables.withheldReason,
    registry_auth: registry.auth,
    registry_auth_problem: registry.problem,
    // Shared through the object store when it is S3 (several hosts); the disk store keeps each runner's own (docs/runners.md "Shared caches").
    shared_caches: ctx.objects.kind === "s3",
  };
}

/**
 * Credentials to clone over https, from the repository's forge (lib/forges/<forge>/index.ts
 * cloneCredentials: for GitHub a read-only installation token for this repository alone, valid an
 * hour). Null for other URLs (ssh, local paths) or when the forge cannot give one; the runner then
 * relies on its own git credentials.
 */
export async function cloneCredentials(
  ctx: ForgeDeps & Pick<AppContext, "db">,
  repo: Repository,
  known?: Integration | null,
): Promise<CloneCredentials | null> {
  if (!/^https:\/\//.test(repo.clone_url)) return null;
  // The repository's integration, unless the caller read it already (jobPayload).
  const integration = known !== undefined ? known : await findIntegration(ctx.db, repo.integration_id);
  if (!integration) return null;
  try {
    return await forgeOf(integration).cloneCredentials(ctx, integration, repo);
  } catch {
    return null;
  }
}

/**
 * The artifact patterns a runner uploads, with the release notes files its publishers read
 * (docs/publishing.md "Release notes"): a file of the repository (or one the build writes) is then
 * uploaded with the build's artifacts, and its publishers find it there.
 */
export function withNotesFiles(config: ConfigSnapshot["execution_config"]): ConfigSnapshot["execution_config"] {
  const notesFiles = (config.publish ?? []).flatMap((p) => (p.notes?.file ? [p.notes.file] : []));
  const missing = notesFiles.filter((f, i) => !config.artifact_patterns.includes(f) && notesFiles.indexOf(f) === i);
  return missing.length ? { ...config, artifact_patterns: [...config.artifact_patterns, ...missing] } : config;
}
