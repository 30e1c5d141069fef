// A verified delivery Roost could not act on: recorded as failed, logged, and an incident raised when
// a repository's deliveries keep failing (lib/webhooks/accept.ts).
import type { Db } from "../db/client.ts";
import type { Logger } from "../daemon/log.ts";
import type { ForgeName } from "../forges/registry.ts";
import type { Repository } from "../integrations/repositories.ts";
import { findProjectBuildingRepository } from "../projects/store.ts";
import { raiseIncident } from "../daemon/incidents.ts";
import { insertDelivery, recentFailures } from "./deliveries.ts";
import type { StoredBody } from "./delivery-bodies.ts";
import type { AcceptResult } from "./accept.ts";

/** Failed deliveries for one repository within an hour that raise an incident. */
export const FAILURES_BEFORE_INCIDENT = 3;
export const DELIVERY_FAILED = "webhook_delivery_failed";

/**
 * A verified delivery Roost could not act on (its transaction failed on something other than its
 * own dedupe key, e.g. a build number the project's counter hands out twice): nothing of it was
 * kept and no dedupe key was taken, so the host's redelivery is acted on normally. Recorded as
 * `failed` with the error, logged, and repeated failures for a repository within an hour raise an
 * incident. Recording is best effort: the receiver answers 5xx whatever happens here.
 */
export async function recordFailed(
  deps: { db: Db; log: Logger },
  d: {
    id: string;
    host: ForgeName;
    delivery_id: string;
    event: string;
    action: string;
    repository_external_id: string | null;
    repository_full_name: string | null;
    commit_sha: string | null;
    received_at: number;
    repository: Repository | null;
    /** The body, stored for the record (once: it may have been before the failure). */
    body: () => Promise<StoredBody>;
  },
  error: unknown,
): Promise<AcceptResult> {
  const message = error instanceof Error ? error.message : String(error);
  const reason = `Roost could not act on this delivery, nothing was built and a redelivery will be acted on: ${message.slice(0, 500)}`;
  const repositoryId = d.repository?.id ?? null;
  deps.log.error("webhook delivery failed", { host: d.host, delivery_id: d.delivery_id, roost_delivery_id: d.id, repository_id: repositoryId, error });
  try {
    const projectId = repositoryId ? await findProjectBuildingRepository(deps.db, repositoryId) : null;
    const { repository: _, body, ...record } = d;
    await insertDelivery(deps.db, {
      ...record,
      body: await body(),
      verified: true,
      result: "failed",
      reason,
      repository_id: repositoryId,
      project_id: projectId,
      decisions: [],
      duplicate_of: null,
    });
    if ((await recentFailures(deps.db, { repositoryId, forge: d.host }, d.received_at - 3600)) >= FAILURES_BEFORE_INCIDENT) {
      await raiseIncident(deps.db, d.received_at, {
        severity: "critical",
        reason: DELIVERY_FAILED,
        message: `${d.host} deliveries${d.repository ? ` for ${d.repository.full_name}` : ""} keep failing, so their pushes build nothing: ${message.slice(0, 300)}`,
        repair_action:
          "Read the failed deliveries (GET /v1/webhook-deliveries?result=failed) and the daemon's log for the error, fix its cause, then redeliver them from the host.",
        resource_kind: d.repository ? "repository" : "webhook_host",
        resource_id: d.repository?.id ?? d.host,
        resource_name: d.repository?.full_name ?? d.host,
      });
    }
  } catch (recording) {
    deps.log.error("webhook delivery failure could not be recorded", { host: d.host, delivery_id: d.delivery_id, error: recording });
  }
  return { deliveryId: d.id, duplicate: false, result: "failed", reason, builds: [] };
}
