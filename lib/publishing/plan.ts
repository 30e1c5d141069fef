// Which deployments a build makes (docs/publishing.md "When a publisher runs"), and the
// deployments a promotion or a retry makes of an earlier build. A deployment is planned whole
// when it is created: its environment's verdict, the artifacts it sends (by SHA-256) and its
// release notes; what is left for the runner is to send them.
import type { Executor, SqlCondition, Statement } from "../db/client.ts";
import { ALWAYS, all } from "../db/client.ts";
import { newId } from "../auth/secrets.ts";
import { systemLineStatements } from "../logs/store.ts";
import { listArtifacts, type Artifact } from "../artifacts/artifacts.ts";
import { matchRefPatterns } from "../pipelines/branch-patterns.ts";
import type { Build } from "../builds/store.ts";
import { findEnvironment, whyEnvironmentRefuses, type Environment } from "./environments.ts";
import { DEFAULT_ARTIFACT, publisherName, targetOf, type Publisher } from "./publishers.ts";
import {
  deploymentInserted,
  lastPublishedBuildNumber,
  toDeployment,
  type Deployment,
  type DeploymentArtifact,
  type NewDeployment,
  type ReleaseNotes,
} from "./deployments.ts";
import { notesFromChangelogs } from "./notes.ts";

export interface PlanInput {
  build: Build;
  publisher: Publisher;
  trigger: Deployment["trigger"];
  retryOf?: string | null;
  requestedBy: { id: string | null; email: string };
}

/**
 * A deployment decided from what was read (its environment, the build's artifacts, its release
 * notes), not yet written, with the line the build's log gets about it. A publisher skipped (its
 * refs do not match, a pull request's build) is a line alone. `environment` is the environment as
 * read, for a guard that it did not change before the write (environmentUnchanged).
 */
export interface PlannedPublish {
  deployment: NewDeployment | null;
  line: string;
  environment?: { name: string; read: Environment | null };
}

/**
 * Decides one deployment of `build` by `publisher`: waiting for approval, queued for a runner,
 * or why it cannot run (then it is created failed, so the deployments view shows it). Reads only.
 */
export async function prepareDeployment(db: Executor, input: PlanInput): Promise<PlannedPublish> {
  const { build, publisher } = input;
  const name = publisherName(publisher);
  // Side by side: on a remote database one request.
  const [env, artifacts] = await Promise.all([findEnvironment(db, build.project_id, publisher.environment), listArtifacts(db, build.id)]);
  let failure: string | null = null;
  let chosen: DeploymentArtifact[] = [];
  let notes: ReleaseNotes = {};
  if (!env)
    failure = `this project has no environment named ${publisher.environment} (create it with PUT /v1/projects/{project_id}/environments/${publisher.environment})`;
  else failure = whyEnvironmentRefuses(env, build);
  if (!failure && build.status !== "succeeded") failure = `build #${build.build_number} did not succeed; only a successful build publishes`;
  if (!failure && build.artifacts_deleted_at !== null) failure = `build #${build.build_number}'s artifacts were deleted by retention`;
  if (!failure) {
    const picked = chooseArtifacts(publisher, artifacts);
    if (typeof picked === "string") failure = picked;
    else chosen = picked;
  }
  if (!failure) notes = await resolveNotes(db, build, publisher, name);
  const status = failure ? "failed" : env!.requires_approval ? "waiting_approval" : "approved";
  const what = `[roost] publish ${name} to ${publisher.environment} (${targetOf(publisher)})`;
  const queued = publisher.type === "host_release" ? "is queued (Roost makes host releases itself)" : "is queued for a runner";
  const next = status === "failed" ? `cannot run: ${failure}` : status === "waiting_approval" ? "waits for approval" : queued;
  return {
    deployment: {
      id: newId(),
      project_id: build.project_id,
      build_id: build.id,
      environment_id: env?.id ?? null,
      environment_name: publisher.environment,
      publisher_name: name,
      publisher,
      target: targetOf(publisher),
      trigger: input.trigger,
      retry_of: input.retryOf ?? null,
      status,
      requested_by: input.requestedBy.id,
      requested_by_email: input.requestedBy.email,
      artifacts: chosen,
      release_notes: notes,
      failure_reason: failure,
    },
    line: `${what} ${next}.`,
    environment: { name: publisher.environment, read: env },
  };
}

/**
 * A planned publish as statements for a batch, each written only where `when` holds: the
 * deployment (its INSERT first, RETURNING it), the announcement of one that waits to its
 * approvers (lib/notifications/notifications.ts reads deployment_notification_outbox after the
 * commit), and its line in the build's log.
 */
export function publishStatements(buildId: string, planned: PlannedPublish, now: number, when: SqlCondition = ALWAYS): Statement[] {
  const d = planned.deployment;
  return [
    ...(d ? [deploymentInserted(d, now, when)] : []),
    ...(d?.status === "waiting_approval"
      ? [{ sql: `INSERT INTO deployment_notification_outbox (deployment_id, created_at) SELECT ?, ? WHERE ${when.sql}`, args: [d.id, now, ...when.args] }]
      : []),
    ...systemLineStatements(buildId, planned.line, now, when),
  ];
}

/** Creates one deployment of `build` by `publisher` in the caller's transaction (a promotion, a retry). */
export async function planDeployment(tx: Executor, input: PlanInput, now: number): Promise<Deployment> {
  const [insert, ...rest] = publishStatements(input.build.id, await prepareDeployment(tx, input), now);
  const deployment = toDeployment((await tx.execute(insert!)).rows[0]!);
  for (const stmt of rest) await tx.execute(stmt);
  return deployment;
}

/**
 * What a build makes when it succeeds, planned from its frozen configuration (reads only): one
 * deployment per publisher whose refs match, a line for each one skipped. None for a pull request
 * or a fork's build: publishers never run there (one line in the log says so). `build` is the
 * build as it succeeded.
 */
export async function planBuildPublishing(db: Executor, build: Build): Promise<PlannedPublish[]> {
  const publishers = build.config_snapshot.execution_config.publish ?? [];
  if (publishers.length === 0) return [];
  const fork = (build.context as { fork?: boolean } | null)?.fork === true;
  if (build.trigger_event === "pull_request" || fork)
    return [
      {
        deployment: null,
        line: `[roost] publishers do not run for ${fork ? "a fork's build" : "a pull request"}: ${publishers.map(publisherName).join(", ")} skipped.`,
      },
    ];
  return Promise.all(
    publishers.map(async (publisher): Promise<PlannedPublish> => {
      if (publisher.refs && publisher.refs.length > 0) {
        const match = matchRefPatterns(publisher.refs, { kind: build.trigger_event === "tag" ? "tag" : "branch", name: build.branch });
        if (!match.matched) return { deployment: null, line: `[roost] publish ${publisherName(publisher)} skipped: ${match.reason}.` };
      }
      return prepareDeployment(db, { build, publisher, trigger: "build", requestedBy: { id: build.created_by, email: build.trigger_actor || "roost" } });
    }),
  );
}

/** The artifacts a publisher sends, or why there are none. */
export function chooseArtifacts(p: Publisher, all: Artifact[]): DeploymentArtifact[] | string {
  const glob = new Bun.Glob(p.artifact ?? DEFAULT_ARTIFACT[p.type]);
  const matching = all.filter((a) => glob.match(a.path));
  const as = (list: Artifact[], role: DeploymentArtifact["role"]) => list.map((a) => ({ id: a.id, path: a.path, sha256: a.sha256, size: a.size, role }));
  const ext = (a: Artifact) => a.path.slice(a.path.lastIndexOf(".") + 1).toLowerCase();
  let chosen: DeploymentArtifact[];
  switch (p.type) {
    case "google_play": {
      // A bundle when there is one (Play requires bundles for new apps); otherwise the APKs.
      const bundles = matching.filter((a) => ext(a) === "aab");
      const apks = matching.filter((a) => ext(a) === "apk");
      chosen = as(bundles.length ? bundles.slice(0, 1) : apks, "binary");
      break;
    }
    case "firebase_app_distribution": {
      const wanted = p.app_id.includes(":ios:") ? ["ipa"] : ["apk", "aab"];
      const first = wanted.map((e) => matching.find((a) => ext(a) === e)).find((a) => a !== undefined);
      chosen = first ? as([first], "binary") : [];
      break;
    }
    case "app_store_connect": {
      const ipa = matching.find((a) => ext(a) === "ipa");
      chosen = ipa ? as([ipa], "binary") : [];
      break;
    }
    case "host_release": {
      // The notes file is the release's description, not one of its assets.
      const notesGlob = p.notes?.file ? new Bun.Glob(p.notes.file) : null;
      const globs = p.attach.map((g) => new Bun.Glob(g));
      chosen = as(
        all.filter((a) => globs.some((g) => g.match(a.path)) && !notesGlob?.match(a.path)),
        "asset",
      );
      if (chosen.length === 0 && p.attach.length > 0) return `no artifact of this build matches attach [${p.attach.join(", ")}]`;
      break;
    }
  }
  if (chosen.length === 0 && p.type !== "host_release")
    return `no artifact of this build is a ${p.type === "google_play" ? ".aab or .apk" : p.type === "app_store_connect" ? ".ipa" : "binary for this app"} matching ${p.artifact ?? DEFAULT_ARTIFACT[p.type]}`;
  if (p.notes?.file) {
    const notesGlob = new Bun.Glob(p.notes.file);
    const file = all.find((a) => notesGlob.match(a.path));
    if (!file)
      return `the release notes file ${p.notes.file} was neither in the repository nor written by the build (the runner uploads it after the build's steps)`;
    chosen.push(...as([file], "notes"));
  }
  return chosen;
}

/** Release notes known when the deployment is made: given text, or the commits since the last publish. */
async function resolveNotes(db: Executor, build: Build, p: Publisher, name: string): Promise<ReleaseNotes> {
  const notes = p.notes;
  if (!notes || notes.file) return {};
  if (notes.text !== undefined) return typeof notes.text === "string" ? { [notes.language]: notes.text } : notes.text;
  const since = (await lastPublishedBuildNumber(db, build.project_id, p.environment, name, build.build_number)) ?? 0;
  const rows = await all(
    db,
    "SELECT changelog FROM builds WHERE project_id = +? AND build_number > ? AND build_number <= ? AND changelog != '' ORDER BY build_number",
    [build.project_id, since, build.build_number],
  );
  return {
    [notes.language]: notesFromChangelogs(
      rows.map((row) => String(row.changelog)),
      `Build #${build.build_number} (${build.commit_sha.slice(0, 12)})`,
    ),
  };
}
