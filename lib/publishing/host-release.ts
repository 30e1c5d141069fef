// Host releases (docs/publishing.md "Host releases"): a host_release publisher makes a release of
// the build's tag on the project's own source host (GitHub or GitLab), with the build's artifacts
// attached and its release notes. The daemon makes it, not a runner: the host's credentials (a
// GitHub App's key and installation tokens, a GitLab token) are the integration's, sealed in the
// daemon and used for nothing else; handing them to a runner would give every runner that
// publishes the power to write to every repository of the integration. The artifacts are already
// in the daemon's object store, so nothing is downloaded either.
//
// Each daemon process runs a pass every 2 s (lib/daemon/background.ts, ./host-release-claim.ts):
//  1. it claims one approved host_release deployment (running, with a lease and this pass's claim
//     id; two releases of one project's tags never run at once), renewing the lease while it works:
//     a process that dies mid-publish leaves it to the reaper, as a lost runner does;
//  2. it resolves the tag (the publisher's, or the tag the build is of), the notes (resolved when
//     the deployment was made, or the notes file the build uploaded) and the assets;
//  3. the forge creates or updates the release (lib/forges/<forge>/releases.ts), so a retry never
//     makes a second release nor uploads an asset the host has; each request goes to the build's
//     log under publish:<name>;
//  4. the outcome and its line in the build's log are one transaction.
import { basename } from "node:path";
import type { AppContext } from "../http/context.ts";
import { one } from "../db/client.ts";
import { appendLogLines, type LogLineInput } from "../logs/store.ts";
import { findBuild, type Build } from "../builds/store.ts";
import { findProject } from "../projects/store.ts";
import { findRepository } from "../integrations/repositories.ts";
import { findIntegration } from "../integrations/store.ts";
import { forgeOf } from "../forges/registry.ts";
import { ForgeApiError } from "../forges/http.ts";
import type { HostRelease, ReleaseAsset } from "../forges/forge.ts";
import { findArtifact, readArtifact } from "../artifacts/artifacts.ts";
import { toDeployment, type Deployment, type StoreAnswer } from "./deployments.ts";
import { endDeployment } from "./end.ts";
import { NotesFileProblem, notesText, parseNotesFile } from "./notes.ts";
import { publisherName, type HostReleaseConfig } from "./publishers.ts";

export type HostReleaseDeps = Pick<AppContext, "db" | "clock" | "events" | "config" | "secrets" | "live" | "log" | "objects">;
type Deps = HostReleaseDeps;

/** One release: its log lines under publish:<name>, then the outcome. */
export async function runHostRelease(ctx: Deps, d: Deployment, claimId: string): Promise<void> {
  const step = `publish:${publisherName(d.publisher)}`.slice(0, 64);
  let nextLine = d.next_line;
  let flushing: Promise<unknown> = Promise.resolve();
  const log = (text: string) => {
    const line: LogLineInput = { step, stream: "stdout", text };
    flushing = flushing.then(async () => {
      const result = await appendLogLines(ctx.db, d.id, d.build_id, nextLine, [line], ctx.clock.now(), ctx.config.runners.maxBuildLogBytes, "deployments");
      if (result.kind === "ok") {
        nextLine = result.next_line;
        if (result.entries.length) await ctx.live.logs.publish(d.build_id, result.entries);
      }
    });
  };
  const renew = setInterval(() => {
    void ctx.db
      .execute({
        sql: "UPDATE deployments SET lease_expires_at = ? WHERE id = ? AND claim_id = ? AND status = 'running'",
        args: [ctx.clock.now() + ctx.config.runners.leaseSeconds, d.id, claimId],
      })
      .catch(() => {});
  }, ctx.config.runners.heartbeatSeconds * 1000);
  let outcome: { status: "succeeded"; answer: StoreAnswer } | { status: "failed"; reason: string };
  try {
    outcome = { status: "succeeded", answer: await publish(ctx, d, log) };
  } catch (error) {
    const reason =
      error instanceof ReleaseFailure || error instanceof NotesFileProblem
        ? error.message
        : error instanceof ForgeApiError
          ? `the host refused: ${error.message}`
          : `the release failed: ${(error as Error).message}`;
    if (!(error instanceof ReleaseFailure || error instanceof NotesFileProblem || error instanceof ForgeApiError))
      ctx.log.error("host release failed", { deployment_id: d.id, error });
    log(`[roost] ${reason}`);
    outcome = { status: "failed", reason };
  } finally {
    clearInterval(renew);
  }
  await flushing.catch(() => {});
  const now = ctx.clock.now();
  await endDeployment(ctx, now, async (tx) => {
    const row = await one(
      tx,
      `UPDATE deployments SET status = ?, store_answer = ?, failure_reason = ?, finished_at = ?, updated_at = ?, lease_expires_at = NULL
       WHERE id = ? AND claim_id = ? AND status = 'running' RETURNING *`,
      [
        outcome.status,
        outcome.status === "succeeded" ? JSON.stringify(outcome.answer) : null,
        outcome.status === "failed" ? outcome.reason.slice(0, 1000) : null,
        now,
        now,
        d.id,
        claimId,
      ],
    );
    return row ? toDeployment(row) : null;
  });
}

/** The release could not be asked for (no tag, a host without releases, a file gone), with a sentence for the deployment. */
class ReleaseFailure extends Error {}

async function publish(ctx: Deps, d: Deployment, log: (text: string) => void): Promise<StoreAnswer> {
  const p = d.publisher as HostReleaseConfig;
  const build = (await findBuild(ctx.db, d.build_id))!;
  const project = await findProject(ctx.db, build.project_id);
  const repository = project ? await findRepository(ctx.db, project.repository_id) : null;
  const integration = repository ? await findIntegration(ctx.db, repository.integration_id) : null;
  if (!repository || !integration) throw new ReleaseFailure("the project's repository or its integration no longer exists");
  const forge = forgeOf(integration);
  if (!forge.publishRelease)
    throw new ReleaseFailure(`a host release is made on GitHub or GitLab; this project's repository is on ${forge.name}, which Roost makes no releases on`);
  // 2.
  const tag = p.tag ?? buildTag(build);
  if (!tag) throw new ReleaseFailure(`build #${build.build_number} is of branch ${build.branch}, not of a tag: give the publisher a tag`);
  const release: HostRelease = {
    tag,
    commit_sha: build.commit_sha,
    name: p.release_name ?? tag,
    notes: notesText(await releaseNotes(ctx, d, p), p.notes?.language),
    draft: p.draft,
    prerelease: p.prerelease,
    assets: await releaseAssets(ctx, d),
  };
  log(
    `[roost] publish ${d.publisher_name} (host_release) of build #${build.build_number} (${build.commit_sha.slice(0, 12)}) to environment ${d.environment_name}: release ${tag} of ${repository.full_name} on ${forge.name}, ${release.assets.length} asset${release.assets.length === 1 ? "" : "s"}`,
  );
  // 3.
  const answer = await forge.publishRelease(ctx, integration, repository, release, log);
  const summary = `release ${tag} of ${repository.full_name} ${answer.created ? "created" : "updated"}: ${answer.uploaded.length} asset${answer.uploaded.length === 1 ? "" : "s"} uploaded, ${answer.kept.length} already there`;
  log(`[roost] ${summary}`);
  return { summary, version: tag, url: answer.url, details: { release_id: answer.id, created: answer.created, uploaded: answer.uploaded, kept: answer.kept } };
}

function buildTag(build: Build): string | null {
  if (build.trigger_event !== "tag") return null;
  return (build.context as { tag?: string } | null)?.tag ?? build.branch;
}

/** The notes resolved when the deployment was made, or read now from the notes file the build uploaded. */
async function releaseNotes(ctx: Deps, d: Deployment, p: HostReleaseConfig): Promise<Record<string, string>> {
  const file = d.artifacts.find((a) => a.role === "notes");
  if (!file) return d.release_notes;
  const stored = await findArtifact(ctx.db, d.build_id, file.id);
  const body = stored ? await readArtifact(ctx.objects, stored) : null;
  if (!body) throw new ReleaseFailure(`the release notes file ${file.path} is gone (retention deleted it)`);
  return parseNotesFile(file.path, await new Response(body).text(), p.notes?.language ?? "en-US");
}

/** The assets, named by their file name (by their path when two share one), read from the data directory when sent. */
async function releaseAssets(ctx: Deps, d: Deployment): Promise<ReleaseAsset[]> {
  const assets = d.artifacts.filter((a) => a.role === "asset");
  const names = assets.map((a) => basename(a.path));
  const out: ReleaseAsset[] = [];
  for (const [i, a] of assets.entries()) {
    const stored = await findArtifact(ctx.db, d.build_id, a.id);
    if (!stored || stored.sha256 !== a.sha256) throw new ReleaseFailure(`the artifact ${a.path} is gone (retention deleted it)`);
    const name = names.indexOf(names[i]!) === names.lastIndexOf(names[i]!) ? names[i]! : a.path.replaceAll("/", "-");
    out.push({
      name,
      size: a.size,
      sha256: a.sha256,
      bytes: async () =>
        (await readArtifact(ctx.objects, stored)) ?? Promise.reject(new ReleaseFailure(`the artifact ${a.path} is gone (retention deleted it)`)),
    });
  }
  return out;
}
