// GET /v1/projects/{project_id} (project viewer).
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { IdParam, ProjectResource } from "../../lib/schemas/ci.ts";
import { scopedProject } from "../../lib/auth/project-access.ts";
import { toPublicProject } from "../../lib/db/projects.ts";

export const endpoint = defineEndpoint({
  operationId: "get_project",
  summary: "Read a project",
  tag: "projects",
  params: z.object({ project_id: IdParam }),
  response: z.object({ project: ProjectResource }),
  errors: [],
  async handle(_input, ctx) {
    const project = scopedProject(ctx);
    const role = ctx.scope!.role;
    return { project: toPublicProject(project, role) };
  },
});
