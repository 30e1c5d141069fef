// A person's decision on a waiting deployment (docs/publishing.md "Approvals"): the route's rule
// makes the caller a maintainer of the project; an environment that lists its approvers takes
// only those. The decision and its line in the build's log are one transaction.
import { z } from "zod";
import type { AppContext, ProjectContext } from "../http/context.ts";
import { defineEndpoint } from "../http/route.ts";
import { inTransaction } from "../db/client.ts";
import { fail } from "../http/errors.ts";
import { appendSystemLineIn } from "../logs/store.ts";
import { findEnvironmentById } from "./environments.ts";
import { decideDeployment, DeploymentResource, deploymentResource, type Deployment } from "./deployments.ts";

/**
 * POST /v1/deployments/{deployment_id}/approve and …/reject (handlers/deployments/approve.ts,
 * reject.ts): two endpoints that differ only in the decision they record.
 */
export function decisionEndpoint(decision: "approved" | "rejected", operation: { operationId: string; summary: string }) {
  return defineEndpoint({
    ...operation,
    authNote: "when the environment lists approvers, only they (each a project maintainer)",
    response: z.object({ deployment: DeploymentResource }),
    errors: ["deployment_not_waiting"],
    async handle(_input, ctx: ProjectContext<"deployment_id">) {
      return { deployment: await decide(ctx, ctx.deployment, decision, ctx.principal.user) };
    },
  });
}

export async function decide(
  ctx: Pick<AppContext, "db" | "clock" | "events">,
  deployment: Deployment,
  decision: "approved" | "rejected",
  actor: { id: string; email: string },
): Promise<DeploymentResource> {
  const env = deployment.environment_id ? await findEnvironmentById(ctx.db, deployment.environment_id) : null;
  if (env && env.approvers.length > 0 && !env.approvers.includes(actor.id)) {
    fail("forbidden", `Only the approvers of environment ${env.name} may approve or reject its deployments.`);
  }
  const now = ctx.clock.now();
  const decided = await inTransaction(ctx.db, async (tx) => {
    const d = await decideDeployment(tx, deployment.id, decision, actor, now);
    if (!d) return null;
    const next = decision === "rejected" ? "it will not run" : d.publisher_type === "host_release" ? "Roost makes it now" : "it is queued for a runner";
    await appendSystemLineIn(tx, d.build_id, `[roost] publish ${d.publisher_name} to ${d.environment_name} ${decision} by ${actor.email}; ${next}.`, now);
    return d;
  });
  if (!decided) {
    const current = (await deploymentResource(ctx.db, deployment.id))!;
    fail(
      "deployment_not_waiting",
      `This deployment is ${current.status}${current.decided_by ? ` (decided by ${current.decided_by})` : ""}; only a deployment waiting for approval can be approved or rejected.`,
    );
  }
  ctx.events.publish({
    type: "deployment.changed",
    deployment_id: decided.id,
    build_id: decided.build_id,
    project_id: decided.project_id,
    status: decided.status,
  });
  return (await deploymentResource(ctx.db, decided.id))!;
}
