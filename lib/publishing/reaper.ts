// A publish whose runner went quiet (docs/publishing.md "When a runner is lost"): its lease
// expired, so the deployment fails with the runner named, a line in the build's log says so, in
// one transaction. Nothing is published again on its own: a retry is a person's call, and the
// publisher checks what the store already has before it sends anything (docs/publishing.md "Retries").
import type { AppContext } from "../http/context.ts";
import { all, inTransaction } from "../db/client.ts";
import { appendSystemLineIn } from "../logs/store.ts";
import { findRunner } from "../runners/store.ts";

export async function reapLostDeployments(ctx: Pick<AppContext, "db" | "clock" | "events" | "config">): Promise<number> {
  let lost = 0;
  const now = ctx.clock.now();
  // Running deployments whose runner stopped renewing their lease.
  const expired = await all(ctx.db, "SELECT * FROM deployments WHERE status = 'running' AND lease_expires_at < ?", [now]);
  if (expired.length === 0) return 0;
  // The deployments' module (its schemas) loads with the first lease found expired, not with the
  // first pass of an idle daemon (docs/benchmarks.md, "idle RSS").
  const { loseDeployment, toDeployment } = await import("./deployments.ts");
  for (const d of expired.map(toDeployment)) {
    const runner = d.runner_id ? await findRunner(ctx.db, d.runner_id) : null;
    // A host release has no runner: the Roost process making it stopped (lib/publishing/host-release.ts).
    const reason = d.runner_id
      ? `runner_lost: runner ${runner?.name ?? d.runner_id} sent no heartbeat for ${ctx.config.runners.leaseSeconds} s while publishing`
      : `runner_lost: the Roost process making this release stopped renewing it for ${ctx.config.runners.leaseSeconds} s`;
    const failed = await inTransaction(ctx.db, async (tx) => {
      const done = await loseDeployment(tx, d.id, reason, now);
      if (done)
        await appendSystemLineIn(
          tx,
          d.build_id,
          `[roost] publish ${d.publisher_name} to ${d.environment_name} failed: ${reason}. Check the store before retrying it.`,
          now,
        );
      return done;
    });
    if (!failed) continue;
    lost++;
    ctx.events.publish({
      type: "deployment.changed",
      deployment_id: failed.id,
      build_id: failed.build_id,
      project_id: failed.project_id,
      status: failed.status,
    });
  }
  return lost;
}
