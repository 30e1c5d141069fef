// What a project's pipeline file says now (GET /v1/projects/{project_id}/pipeline-file): each file
// its pipelines read, at the head of the default branch, as a push there would read it — its
// pipelines with the line each is defined on and what they mean, or its problems — and the last
// problem a webhook delivery found with it. The web app shows this so nobody edits, in a form, a
// pipeline that the file overrides (docs/pipelines.md "How Roost uses the file").
import type { AppContext } from "../http/context.ts";
import type { Project } from "../projects/store.ts";
import { listPipelines } from "./store.ts";
import { findRepository } from "../integrations/repositories.ts";
import { findIntegration } from "../integrations/store.ts";
import type { ForgeDeps } from "../forges/forge.ts";
import { forgeOf } from "../forges/registry.ts";
import { ForgeApiError } from "../forges/http.ts";
import { DecryptionError } from "../crypto/secret-box.ts";
import { lastFileProblem } from "../webhooks/deliveries.ts";
import type { ConfigSnapshot } from "./config.ts";
import { publicSnapshot } from "./snapshot.ts";
import type { FileProblem } from "./file.ts";
import { configPathsOf, fileLabel, fileSnapshot, invalidFileSentence, readPipelineFile } from "./source.ts";

export interface FilePipelineView extends Omit<ConfigSnapshot, "pipeline_name" | "config_path"> {
  name: string;
  line: number;
  pipeline_id: string | null;
  schedules: { cron: string; timezone: string; branch: string | null; build_when_unchanged: boolean }[];
}

export interface PipelineFileView {
  path: string;
  status: "missing" | "valid" | "invalid" | "unreadable";
  pipelines: FilePipelineView[];
  problems: FileProblem[];
  message: string | null;
}

export interface PipelineFileStatus {
  branch: string;
  commit_sha: string | null;
  files: PipelineFileView[];
  last_error: { delivery_id: string; received_at: number; commit_sha: string | null; message: string } | null;
}

/** Reads every file the project's pipelines read, at the default branch's head; never throws for the host's answers. */
export async function pipelineFileStatus(ctx: ForgeDeps & Pick<AppContext, "db">, project: Project): Promise<PipelineFileStatus> {
  const pipelines = await listPipelines(ctx.db, project.id);
  const paths = configPathsOf(pipelines);
  const last_error = await lastFileProblem(ctx.db, project.id);
  const branch = project.default_branch;
  const unreadable = (message: string): PipelineFileStatus => ({
    branch,
    commit_sha: null,
    files: paths.map((path) => ({ path, status: "unreadable", pipelines: [], problems: [], message: `could not read ${path} of ${branch}: ${message}` })),
    last_error,
  });
  const repository = await findRepository(ctx.db, project.repository_id);
  const integration = repository ? await findIntegration(ctx.db, repository.integration_id) : null;
  if (!repository || !integration) return unreadable("the project's repository is no longer in the catalogue");
  let head: string;
  try {
    head = await forgeOf(integration).branchHead(ctx, integration, repository, branch);
  } catch (error) {
    if (error instanceof ForgeApiError) return unreadable(error.message);
    if (error instanceof DecryptionError) return unreadable("the integration's credentials cannot be decrypted with this instance's secret key");
    throw error;
  }
  const files: PipelineFileView[] = [];
  for (const path of paths) {
    const read = await readPipelineFile(ctx, { integration, repository, commitSha: head, ref: `refs/heads/${branch}` }, path);
    const view: PipelineFileView = { path, status: read.status, pipelines: [], problems: [], message: null };
    if (read.status === "valid") {
      for (const [name, definition] of read.pipelines) {
        const { pipeline_name: _name, config_path: _path, ...snapshot } = publicSnapshot(fileSnapshot(name, path, definition, branch));
        view.pipelines.push({
          name,
          line: read.lines.get(name) ?? 1,
          pipeline_id: pipelines.find((p) => p.name === name && p.config_path === path)?.id ?? null,
          ...snapshot,
          schedules: definition.schedules.map((s) => ({
            cron: s.cron,
            timezone: s.timezone,
            branch: s.branch ?? null,
            build_when_unchanged: s.build_when_unchanged,
          })),
        });
      }
    } else if (read.status === "invalid") {
      view.problems = read.problems;
      view.message = invalidFileSentence(read);
    } else if (read.status === "unreadable") {
      view.message = `could not read ${fileLabel(read)}: ${read.message}`;
    }
    files.push(view);
  }
  return { branch, commit_sha: head, files, last_error };
}
