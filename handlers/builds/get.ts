// GET /v1/builds/{build_id} (project viewer).
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { BuildResource, IdParam } from "../../lib/schemas/ci.ts";
import { scopedBuild } from "../../lib/auth/project-access.ts";
import { findBuild, toPublicBuild } from "../../lib/db/builds.ts";

export const endpoint = defineEndpoint({
  operationId: "get_build",
  summary: "Read a build",
  tag: "builds",
  params: z.object({ build_id: IdParam }),
  response: z.object({ build: BuildResource }),
  errors: [],
  async handle({ params }, ctx) {
    const build = scopedBuild(ctx);
    return { build: toPublicBuild(build) };
  },
});
