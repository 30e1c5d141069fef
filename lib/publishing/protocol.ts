// Shared steps of the publish protocol (docs/runners.md "Protocol"): fencing, as for jobs
// (lib/runners/protocol.ts): the deployment must be this runner's and still running.
import type { RunnerContext } from "../http/context.ts";
import { fail } from "../http/errors.ts";
import { findDeployment, type Deployment } from "./deployments.ts";

/** `read`: the deployment's row if the caller read it already (lib/logs/append-endpoint.ts reads it beside the runner's token). */
export async function ownedRunningDeployment(
  ctx: RunnerContext,
  id: string,
  read: Promise<Deployment | null> = findDeployment(ctx.db, id),
): Promise<Deployment> {
  const d = await read;
  if (!d || d.runner_id !== ctx.runner.id) fail("job_not_assigned", "This deployment is not assigned to this runner.");
  if (d.status !== "running") fail("job_finished", `This deployment is ${d.status}; stop working on it.`);
  return d;
}
