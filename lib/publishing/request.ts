// A deployment asked for by a person (docs/publishing.md "Promotion"): a promotion of an earlier
// build's artifacts to an environment or track, or a retry of a failed deployment. The same bytes
// go out: the deployment names the build's artifacts by their SHA-256, which the runner checks.
// What cannot run is refused here (409 build_not_publishable, 404 for a missing environment)
// rather than recorded as a failed deployment; the environment's approval applies as to any other.
import type { AppContext } from "../http/context.ts";
import { inTransaction } from "../db/client.ts";
import { fail } from "../http/errors.ts";
import { listArtifacts } from "../artifacts/artifacts.ts";
import type { Build } from "../builds/store.ts";
import { findEnvironment, whyEnvironmentRefuses } from "./environments.ts";
import { chooseArtifacts, planDeployment } from "./plan.ts";
import { deploymentResource, type Deployment, type DeploymentResource } from "./deployments.ts";
import type { Publisher } from "./publishers.ts";

export async function requestDeployment(
  ctx: Pick<AppContext, "db" | "clock" | "events">,
  build: Build,
  publisher: Publisher,
  trigger: Deployment["trigger"],
  retryOf: string | null,
  actor: { id: string; email: string },
): Promise<DeploymentResource> {
  const env =
    (await findEnvironment(ctx.db, build.project_id, publisher.environment)) ??
    fail("not_found", `This project has no environment named ${publisher.environment}.`);
  const refusal = whyEnvironmentRefuses(env, build);
  if (refusal) fail("build_not_publishable", `${refusal[0]!.toUpperCase()}${refusal.slice(1)}.`);
  if (build.status !== "succeeded") fail("build_not_publishable", `Build #${build.build_number} is ${build.status}; only a successful build publishes.`);
  if (build.artifacts_deleted_at !== null) fail("build_not_publishable", `Build #${build.build_number}'s artifacts were deleted by retention.`);
  const chosen = chooseArtifacts(publisher, await listArtifacts(ctx.db, build.id));
  if (typeof chosen === "string") fail("build_not_publishable", `Build #${build.build_number} cannot be published: ${chosen}.`);
  const d = await inTransaction(ctx.db, (tx) => planDeployment(tx, { build, publisher, trigger, retryOf, requestedBy: actor }, ctx.clock.now()));
  ctx.events.publish({ type: "deployment.changed", deployment_id: d.id, build_id: d.build_id, project_id: d.project_id, status: d.status });
  return (await deploymentResource(ctx.db, d.id))!;
}
