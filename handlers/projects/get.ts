// GET /v1/projects/{project_id} (project viewer).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { ProjectResource } from "../../lib/projects/wire.ts";
import { toPublicProject } from "../../lib/projects/store.ts";

export const endpoint = defineEndpoint({
  operationId: "get_project",
  summary: "Read a project",
  response: z.object({ project: ProjectResource }),
  async handle(_input, ctx: ProjectContext) {
    const role = ctx.role;
    return { project: toPublicProject(ctx.project, role) };
  },
});
