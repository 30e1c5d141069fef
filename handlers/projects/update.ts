// PATCH /v1/projects/{project_id} (docs/api.md "Projects"; project maintainer). Updatable fields:
// name, description, default_branch, settings (replaced as a whole). The repository is fixed.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { DisplayName } from "../../lib/schemas/shared.ts";
import { BranchName } from "../../lib/pipelines/wire.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { ProjectResource, ProjectSettings } from "../../lib/projects/wire.ts";
import { findProject, toPublicProject, updateProject } from "../../lib/projects/store.ts";

export const UpdateProjectBody = z
  .object({
    name: DisplayName.optional(),
    description: z.string().max(2000).optional(),
    default_branch: BranchName.optional(),
    settings: ProjectSettings.optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, { message: "send at least one of name, description, default_branch, settings" });

export const endpoint = defineEndpoint({
  operationId: "update_project",
  summary: "Update a project",
  params: z.object({ project_id: IdParam }),
  body: UpdateProjectBody,
  response: z.object({ project: ProjectResource }),
  async handle({ params, body }, ctx: ProjectContext) {
    const role = ctx.role;
    await updateProject(ctx.db, params.project_id, body, ctx.clock.now());
    return { project: toPublicProject((await findProject(ctx.db, params.project_id))!, role) };
  },
});
