// POST /v1/builds/{build_id}/rerun (docs/api.md "Builds"; project developer): a new build that copies
// the source build's config_snapshot, branch and commit_sha, so it runs what the original ran
// with, even if the pipeline changed since, and the image its container ran, by digest
// (lib/builds/pin-image.ts). Its trigger_type is "rerun" and it starts queued.
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { BuildResource } from "../../lib/builds/wire.ts";
import { toPublicBuild } from "../../lib/builds/store.ts";
import { PipelineNotFoundError, createBuild } from "../../lib/builds/create.ts";
import { snapshotWithPinnedImage } from "../../lib/builds/pin-image.ts";

export const endpoint = defineEndpoint({
  operationId: "rerun_build",
  summary: "Re-run a build",
  ...created({ build: BuildResource }),
  async handle(_input, ctx: ProjectContext<"build_id">) {
    const source = ctx.build;
    try {
      const { build } = await createBuild(ctx, {
        pipelineId: source.pipeline_id,
        branch: source.branch,
        commitSha: source.commit_sha,
        changelog: source.changelog,
        triggerType: "rerun",
        triggerEvent: source.trigger_event,
        triggerRef: source.trigger_ref,
        triggerActor: ctx.principal.user.email,
        concurrencyKey: null,
        sourceBuildId: source.id,
        configSnapshot: snapshotWithPinnedImage(source),
        definitionSource: source.definition_source,
        createdBy: ctx.principal.user.id,
        context: source.context,
      });
      return { build: toPublicBuild(build) };
    } catch (error) {
      if (error instanceof PipelineNotFoundError) fail("not_found", "The build's pipeline no longer exists.");
      throw error;
    }
  },
});
