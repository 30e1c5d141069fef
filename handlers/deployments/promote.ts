// POST /v1/builds/{build_id}/publish (project developer): promotion without a rebuild
// (docs/publishing.md "Promotion"): one of the build's publishers, to another environment or
// track, with the same artifacts (the deployment names them by SHA-256 and the runner checks
// every byte). The target environment's approval and allowed refs apply as to any publish.
import { z } from "zod";
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { DeploymentResource } from "../../lib/publishing/deployments.ts";
import { EnvironmentName } from "../../lib/publishing/environments.ts";
import { overridePublisher, PublisherOverrides, publisherName } from "../../lib/publishing/publishers.ts";
import { requestDeployment } from "../../lib/publishing/request.ts";

export const PublishBuildBody = z
  .object({
    publisher: z.string().min(1).max(63).describe("the name of one of the build's publishers (GET /v1/builds/{id}: config_snapshot.execution_config.publish)"),
    environment: EnvironmentName.optional().describe("default: the publisher's own environment"),
    overrides: PublisherOverrides.default({}).describe("where and how it lands: a track and rollout, testers and groups, beta groups, a tag"),
  })
  .strict();

export const endpoint = defineEndpoint({
  operationId: "publish_build",
  summary: "Publish an earlier build's artifacts (promotion without a rebuild)",
  body: PublishBuildBody,
  ...created({ deployment: DeploymentResource }),
  errors: ["invalid_request", "build_not_publishable"],
  async handle({ body }, ctx: ProjectContext<"build_id">) {
    const publishers = ctx.build.config_snapshot.execution_config.publish ?? [];
    const base = publishers.find((p) => publisherName(p) === body.publisher);
    if (!base)
      fail(
        "not_found",
        publishers.length
          ? `Build #${ctx.build.build_number} has no publisher ${body.publisher}; it has ${publishers.map(publisherName).join(", ")}.`
          : `Build #${ctx.build.build_number} has no publishers.`,
      );
    const merged = overridePublisher(base, body.environment, body.overrides);
    if (!merged.ok)
      fail("invalid_request", "The overrides do not make a valid publisher.", {
        details: merged.issues.map((i) => ({ path: `body.${i.path}`, message: i.message })),
      });
    const user = ctx.principal.user;
    return {
      deployment: await requestDeployment(ctx, ctx.build, { ...merged.publisher, name: base.name ?? publisherName(base) }, "promotion", null, {
        id: user.id,
        email: user.email,
      }),
    };
  },
});
