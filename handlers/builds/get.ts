// GET /v1/builds/{build_id} (project viewer).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { BuildResource } from "../../lib/builds/wire.ts";
import { toPublicBuild } from "../../lib/builds/store.ts";

export const endpoint = defineEndpoint({
  operationId: "get_build",
  summary: "Read a build",
  response: z.object({ build: BuildResource }),
  async handle(_input, ctx: ProjectContext<"build_id">) {
    return { build: toPublicBuild(ctx.build) };
  },
});
