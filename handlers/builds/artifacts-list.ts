// GET /v1/builds/{build_id}/artifacts (project viewer): the build's uploaded files.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { listArtifacts } from "../../lib/artifacts/artifacts.ts";
import { ArtifactResource } from "../../lib/runners/wire.ts";

export const endpoint = defineEndpoint({
  operationId: "list_build_artifacts",
  summary: "A build's artifacts",
  response: z.object({ artifacts: z.array(ArtifactResource) }),
  async handle(_input, ctx: ProjectContext<"build_id">) {
    return { artifacts: await listArtifacts(ctx.db, ctx.build.id) };
  },
});
