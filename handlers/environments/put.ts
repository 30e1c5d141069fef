// PUT /v1/projects/{project_id}/environments/{environment} (project maintainer): creates or
// replaces an environment's protection (approval, approvers, allowed refs); its secrets are kept.
// Approvers are named by e-mail and must be maintainers of the project: the approve route's rule.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import {
  EnvironmentName,
  EnvironmentResource,
  PutEnvironmentBody,
  putEnvironment,
  resolveApprovers,
  toPublicEnvironment,
} from "../../lib/publishing/environments.ts";

export const endpoint = defineEndpoint({
  operationId: "put_environment",
  summary: "Create or replace an environment",
  params: z.object({ environment: EnvironmentName }),
  body: PutEnvironmentBody,
  response: z.object({ environment: EnvironmentResource, created: z.boolean() }),
  errors: ["invalid_request"],
  async handle({ params, body }, ctx: ProjectContext) {
    const approvers = await resolveApprovers(ctx.db, ctx.project.id, body.approvers);
    if (approvers.problems.length)
      fail("invalid_request", "Every approver must be a maintainer of the project.", {
        details: approvers.problems.map((p) => ({ path: `body.approvers.${p.index}`, message: p.message })),
      });
    const { environment, created } = await putEnvironment(
      ctx.db,
      ctx.project.id,
      params.environment,
      body,
      approvers.ids,
      ctx.principal.user.id,
      ctx.clock.now(),
    );
    return { environment: await toPublicEnvironment(ctx.db, environment), created };
  },
});
