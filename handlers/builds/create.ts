// POST /v1/projects/{project_id}/builds (docs/api.md "Builds"; project developer): a manual build of one
// pipeline. The branch defaults to the project's default branch; without a commit, the branch's
// head is asked of the source host, so the build is always pinned to one commit. The pipeline's
// definition is read from the pipeline file at that commit when the repository has one there
// (docs/pipelines.md).
import { z } from "zod";
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { BranchName } from "../../lib/pipelines/wire.ts";
import { BuildResource } from "../../lib/builds/wire.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { findPipeline, type Pipeline } from "../../lib/pipelines/store.ts";
import type { ConfigSnapshot } from "../../lib/pipelines/config.ts";
import type { DefinitionSource } from "../../lib/pipelines/definition.ts";
import { definitionAt } from "../../lib/pipelines/source.ts";
import { findRepository } from "../../lib/integrations/repositories.ts";
import { findIntegration } from "../../lib/integrations/store.ts";
import { toPublicBuild } from "../../lib/builds/store.ts";
import { createBuild } from "../../lib/builds/create.ts";
import type { ForgeDeps } from "../../lib/forges/forge.ts";
import { forgeOf } from "../../lib/forges/registry.ts";
import type { AppContext } from "../../lib/http/context.ts";
import { ForgeApiError } from "../../lib/forges/http.ts";
import { DecryptionError } from "../../lib/crypto/secret-box.ts";

export const CommitSha = z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/, "must be a full 40- (or 64-) character lowercase hex commit id");

export const CreateBuildBody = z
  .object({
    pipeline_id: IdParam,
    branch: BranchName.optional().describe("default: the project's default branch"),
    commit_sha: CommitSha.optional().describe("default: the branch's head at the source host"),
  })
  .strict();

export const endpoint = defineEndpoint({
  operationId: "create_build",
  summary: "Start a manual build",
  body: CreateBuildBody,
  ...created({ build: BuildResource }),
  errors: ["source_host_error", "decryption_error", "invalid_pipeline_file"],
  async handle({ body }, ctx: ProjectContext) {
    const pipeline = await findPipeline(ctx.db, body.pipeline_id);
    if (!pipeline || pipeline.project_id !== ctx.project.id) fail("not_found", "No pipeline with that id in this project.");
    const branch = body.branch ?? ctx.project.default_branch;
    const commitSha = body.commit_sha ?? (await resolveHead(ctx, ctx.project.repository_id, branch));
    const definition = await definitionFor(ctx, ctx.project, pipeline, commitSha, branch);
    const { build } = await createBuild(ctx, {
      ...definition,
      pipelineId: pipeline.id,
      branch,
      commitSha,
      triggerType: "manual",
      triggerEvent: "manual",
      triggerRef: `refs/heads/${branch}`,
      triggerActor: ctx.principal.user.email,
      concurrencyKey: null,
      createdBy: ctx.principal.user.id,
      // A named commit is not known to be the branch's: such a build gets no protected_refs secret.
      ...(body.commit_sha ? { context: { commit_pinned: true } } : {}),
    });
    return { build: toPublicBuild(build) };
  },
});

/** The pipeline's definition at the commit (lib/pipelines/source.ts): 400 invalid_pipeline_file with every problem and its line when the file is invalid or does not define this pipeline. */
async function definitionFor(
  ctx: ForgeDeps & Pick<AppContext, "db">,
  project: { repository_id: string; default_branch: string },
  pipeline: Pipeline,
  commitSha: string,
  branch: string,
): Promise<{ configSnapshot?: ConfigSnapshot; definitionSource?: DefinitionSource }> {
  const found = await definitionAt(ctx, project, pipeline, commitSha, branch);
  if (found.kind === "unreadable") fail("source_host_error", found.message);
  if (found.kind === "invalid") {
    if (found.problems.length === 0) fail("invalid_pipeline_file", found.message);
    fail("invalid_pipeline_file", found.message, {
      details: found.problems.map((p) => ({ path: p.path, message: p.message, line: p.line, column: p.column })),
    });
  }
  return { configSnapshot: found.configSnapshot, definitionSource: found.definitionSource };
}

async function resolveHead(ctx: ForgeDeps & Pick<AppContext, "db">, repositoryId: string, branch: string): Promise<string> {
  const repo = await findRepository(ctx.db, repositoryId);
  const integration = repo ? await findIntegration(ctx.db, repo.integration_id) : null;
  if (!repo || !integration) fail("source_host_error", "The project's repository is no longer in the catalogue; pass commit_sha.");
  try {
    return await forgeOf(integration).branchHead(ctx, integration, repo, branch);
  } catch (error) {
    if (error instanceof DecryptionError) fail("decryption_error");
    if (error instanceof ForgeApiError) {
      if (error.status === 404) fail("not_found", `Branch ${branch} does not exist in ${repo.full_name}.`);
      fail("source_host_error", `Could not resolve the head of ${branch}: ${error.message}. Pass commit_sha to build without asking the host.`);
    }
    throw error;
  }
}
