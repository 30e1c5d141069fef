// GET /v1/projects/{project_id}/environments (project viewer): the project's environments, each
// with what its targets hold now (the newest successful deployment per target; docs/publishing.md).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { EnvironmentResource, listEnvironments, toPublicEnvironment } from "../../lib/publishing/environments.ts";
import { CurrentVersion, currentVersions } from "../../lib/publishing/deployments.ts";

export const endpoint = defineEndpoint({
  operationId: "list_environments",
  summary: "List a project's environments and what each holds now",
  response: z.object({ environments: z.array(EnvironmentResource.extend({ current: z.array(CurrentVersion) })) }),
  async handle(_input, ctx: ProjectContext) {
    const current = await currentVersions(ctx.db, ctx.project.id);
    const environments = [];
    for (const e of await listEnvironments(ctx.db, ctx.project.id))
      environments.push({ ...(await toPublicEnvironment(ctx.db, e)), current: current.filter((c) => c.environment === e.name) });
    return { environments };
  },
});
