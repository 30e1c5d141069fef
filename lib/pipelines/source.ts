// Where a build's pipeline definition comes from (docs/pipelines.md): the pipeline file read from
// the repository at the build's commit through its forge (lib/forges/<forge>/index.ts readFile:
// GitHub's contents API, GitLab's repository files API, Gitea's and Bitbucket's raw file APIs,
// or the plain git remote itself), or, when the
// repository has no such file, the pipelines configured through Roost's API.
import { posix } from "node:path";
import type { Integration } from "../integrations/store.ts";
import type { Repository } from "../integrations/repositories.ts";
import type { Pipeline } from "./store.ts";
import type { Executor } from "../db/client.ts";
import { findRepository } from "../integrations/repositories.ts";
import { findIntegration } from "../integrations/store.ts";
import type { ConfigSnapshot } from "./config.ts";
import { DEFAULT_CONFIG_PATH } from "./config.ts";
import type { ForgeDeps } from "../forges/forge.ts";
import type { PushedPaths } from "../forges/event.ts";
import { forgeOf } from "../forges/registry.ts";
import { ForgeApiError } from "../forges/http.ts";
import { DecryptionError } from "../crypto/secret-box.ts";
import type { DefinitionSource } from "./definition.ts";
import { pipelineFileCacheOf } from "./file-cache.ts";
import { describeProblem, fileDefinition, type FilePipelineOutput, type FileProblem } from "./file.ts";

/** A pipeline file as read for one event. */
export type PipelineFileRead =
  | { status: "missing"; path: string; commit_sha: string }
  | { status: "valid"; path: string; commit_sha: string; branch?: string; pipelines: Map<string, FilePipelineOutput>; lines: Map<string, number> }
  | { status: "invalid"; path: string; commit_sha: string; branch?: string; problems: FileProblem[] }
  | { status: "unreadable"; path: string; commit_sha: string; message: string };

export interface ReadTarget {
  integration: Integration;
  repository: Repository;
  /** The build's commit. */
  commitSha: string;
  /** The ref the commit was pushed to (a fallback for git servers that refuse fetching by id). */
  ref: string | null;
  /**
   * For a pull request from a fork: its target branch. The file is then read at the target
   * branch's head, so a fork cannot change its own triggers or steps.
   */
  forkTargetBranch?: string | null;
  /** A push's previous head and the paths its commits touched (TriggerEvent.pushed). */
  pushed?: PushedPaths;
}

/**
 * The commit whose file at `path` is the file at the target's commit without asking the host: the
 * pushed branch's previous head, when no pushed commit added, modified or removed that path.
 */
export function unchangedSince(target: Pick<ReadTarget, "pushed" | "forkTargetBranch">, path: string): string | null {
  if (!target.pushed || target.forkTargetBranch) return null;
  const normal = posix.normalize(path);
  for (const touched of target.pushed.paths) if (posix.normalize(touched) === normal) return null;
  return target.pushed.before;
}

/** Reads and validates the pipeline file at `path` for one event; never throws for the host's answers. */
export async function readPipelineFile(deps: ForgeDeps, target: ReadTarget, path: string): Promise<PipelineFileRead> {
  let sha = target.commitSha;
  const branch = target.forkTargetBranch ?? undefined;
  try {
    if (branch) sha = await forgeOf(target.integration).branchHead(deps, target.integration, target.repository, branch);
    const at = sha;
    const keyAt = (commit: string) => `${target.repository.id}\n${path}\n${commit}`;
    const since = unchangedSince(target, path);
    // Read once per repository, path and commit, parsed once per text (lib/pipelines/file-cache.ts);
    // not read at all when the push shows it unchanged since a commit whose file is kept.
    const content = await pipelineFileCacheOf(deps.secrets).get(
      keyAt(at),
      () => forgeOf(target.integration).readFile(deps, target.integration, target.repository, path, at, branch ? `refs/heads/${branch}` : target.ref),
      since === null ? undefined : keyAt(since),
    );
    if (content.status === "missing") return { status: "missing", path, commit_sha: sha };
    if (content.status === "invalid") return { status: "invalid", path, commit_sha: sha, problems: content.problems, ...(branch ? { branch } : {}) };
    return { status: "valid", path, commit_sha: sha, pipelines: content.pipelines, lines: content.lines, ...(branch ? { branch } : {}) };
  } catch (error) {
    if (error instanceof ForgeApiError) return { status: "unreadable", path, commit_sha: sha, message: error.message };
    if (error instanceof DecryptionError)
      return { status: "unreadable", path, commit_sha: sha, message: "the integration's credentials cannot be decrypted with this instance's secret key" };
    throw error;
  }
}

/** The paths a project's pipelines read (each pipeline's config_path; roost.yaml for a project with none yet). */
export function configPathsOf(pipelines: Pipeline[]): string[] {
  const paths = [...new Set(pipelines.map((p) => p.config_path))];
  return paths.length ? paths : [DEFAULT_CONFIG_PATH];
}

/** "roost.yaml at 1a2b3c4d5e6f" (or "… on main at …" for a fork's target branch). */
export function fileLabel(read: { path: string; commit_sha: string; branch?: string }): string {
  return `${read.path}${read.branch ? ` of ${read.branch}` : ""} at ${read.commit_sha.slice(0, 12)}`;
}

/** One sentence naming every problem of an invalid file (the first few), for the delivery log. */
export function invalidFileSentence(read: { path: string; commit_sha: string; branch?: string; problems: FileProblem[] }): string {
  const shown = read.problems.slice(0, 5).map(describeProblem).join("; ");
  const more = read.problems.length > 5 ? `; and ${read.problems.length - 5} more` : "";
  return `${fileLabel(read)} is invalid: ${shown}${more}`;
}

export function definitionOf(read: { path: string; commit_sha: string; branch?: string }): DefinitionSource {
  return { source: "file", path: read.path, commit_sha: read.commit_sha, ...(read.branch ? { branch: read.branch } : {}) };
}

/** The snapshot a build of `name` freezes from a valid file. */
export function fileSnapshot(name: string, path: string, p: FilePipelineOutput, projectDefaultBranch: string): ConfigSnapshot {
  return { pipeline_name: name, config_path: path, ...fileDefinition(p, projectDefaultBranch) };
}

/** What a build of one pipeline at one commit is built from, outside a webhook delivery (a manual or scheduled build). */
export type BuildDefinition =
  | { kind: "definition"; configSnapshot?: ConfigSnapshot; definitionSource?: DefinitionSource }
  | { kind: "unreadable"; message: string }
  | { kind: "invalid"; message: string; problems: FileProblem[] };

/**
 * The pipeline's definition at the commit: from the pipeline file when the repository has it
 * there, otherwise the pipeline as configured through the API (no snapshot: the stored one). An
 * invalid file, or one that does not define this pipeline, is never silently replaced by the API's
 * definition.
 */
export async function definitionAt(
  deps: ForgeDeps & { db: Executor },
  project: { repository_id: string; default_branch: string },
  pipeline: Pipeline,
  commitSha: string,
  branch: string,
): Promise<BuildDefinition> {
  const repository = await findRepository(deps.db, project.repository_id);
  const integration = repository ? await findIntegration(deps.db, repository.integration_id) : null;
  if (!repository || !integration) return { kind: "definition" };
  const read = await readPipelineFile(deps, { integration, repository, commitSha, ref: `refs/heads/${branch}` }, pipeline.config_path);
  if (read.status === "missing") return { kind: "definition" };
  if (read.status === "unreadable") return { kind: "unreadable", message: `Could not read ${fileLabel(read)}: ${read.message}.` };
  if (read.status === "invalid") return { kind: "invalid", message: invalidFileSentence(read), problems: read.problems };
  const defined = read.pipelines.get(pipeline.name);
  if (!defined)
    return {
      kind: "invalid",
      message: `${fileLabel(read)} defines no pipeline named ${pipeline.name} (it defines ${[...read.pipelines.keys()].join(", ")}).`,
      problems: [],
    };
  return { kind: "definition", configSnapshot: fileSnapshot(pipeline.name, read.path, defined, project.default_branch), definitionSource: definitionOf(read) };
}
