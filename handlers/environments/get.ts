// GET /v1/projects/{project_id}/environments/{environment} (project viewer): one environment and what its targets hold now.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { EnvironmentName, EnvironmentResource, findEnvironment, toPublicEnvironment } from "../../lib/publishing/environments.ts";
import { CurrentVersion, currentVersions } from "../../lib/publishing/deployments.ts";

export const endpoint = defineEndpoint({
  operationId: "get_environment",
  summary: "Get an environment and what it holds now",
  params: z.object({ environment: EnvironmentName }),
  response: z.object({ environment: EnvironmentResource.extend({ current: z.array(CurrentVersion) }) }),
  async handle({ params }, ctx: ProjectContext) {
    const env =
      (await findEnvironment(ctx.db, ctx.project.id, params.environment)) ?? fail("not_found", `No environment ${params.environment} in this project.`);
    const current = (await currentVersions(ctx.db, ctx.project.id)).filter((c) => c.environment === env.name);
    return { environment: { ...(await toPublicEnvironment(ctx.db, env)), current } };
  },
});
