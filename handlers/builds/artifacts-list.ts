// GET /v1/builds/{build_id}/artifacts (project viewer): the build's uploaded files.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { IdParam } from "../../lib/schemas/ci.ts";
import { requireProjectRole } from "../../lib/auth/project-access.ts";
import { findBuild } from "../../lib/db/builds.ts";
import { listArtifacts } from "../../lib/artifacts.ts";
import { ArtifactResource } from "../../lib/runners/wire.ts";

export const endpoint = defineEndpoint({
  operationId: "list_build_artifacts",
  summary: "A build's artifacts",
  tag: "builds",
  params: z.object({ build_id: IdParam }),
  response: z.object({ artifacts: z.array(ArtifactResource) }),
  errors: ["not_found", "invalid_session", "invalid_token"],
  async handle({ params }, ctx) {
    const build = await findBuild(ctx.db, params.build_id);
    if (!build) fail("not_found", "No build with that id.");
    await requireProjectRole(ctx, build.project_id, "viewer");
    return { artifacts: await listArtifacts(ctx.db, build.id) };
  },
});
