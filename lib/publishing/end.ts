// A deployment's end, however it was published (docs/publishing.md "Deployments"): its outcome and
// its line in the build's log are one transaction, then listeners (the build page, GET /v1/events)
// are told. The runner's finish and the daemon's own host releases both end a deployment this way.
import type { Db, Transaction } from "../db/client.ts";
import { inTransaction } from "../db/client.ts";
import type { EventBus } from "../daemon/events.ts";
import { appendSystemLineIn } from "../logs/store.ts";
import type { Deployment } from "./deployments.ts";

/** Runs `end` (which records the outcome and returns the finished deployment, or null when it was not running) and says so in the log. */
export async function endDeployment(
  deps: { db: Db; events: EventBus },
  now: number,
  end: (tx: Transaction) => Promise<Deployment | null>,
): Promise<Deployment | null> {
  const finished = await inTransaction(deps.db, async (tx) => {
    const done = await end(tx);
    if (done) {
      const said = done.status === "succeeded" ? `succeeded: ${done.store_answer?.summary ?? "published"}` : `failed: ${done.failure_reason}`;
      await appendSystemLineIn(tx, done.build_id, `[roost] publish ${done.publisher_name} to ${done.environment_name} ${said}`, now);
    }
    return done;
  });
  if (finished)
    deps.events.publish({
      type: "deployment.changed",
      deployment_id: finished.id,
      build_id: finished.build_id,
      project_id: finished.project_id,
      status: finished.status,
    });
  return finished;
}
