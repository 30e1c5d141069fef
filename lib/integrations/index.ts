// Integrations as the rest of Roost sees them: how the API shows one, the catalogue sync through
// its forge (which raises an operator incident when a forge keeps refusing, and resolves it when
// sync works again), and disconnecting. Credentials: ./credentials.ts.
import type { AppContext } from "../http/context.ts";
import type { Integration } from "./store.ts";
import { deleteIntegration, recordSync, toPublicIntegration } from "./store.ts";
import { repositoryIdsOf, upsertRepositories } from "./repositories.ts";
import { inTransaction, type Db } from "../db/client.ts";
import { raiseIncident, resolveIncident, resolveIncidentsOf } from "../daemon/incidents.ts";
import type { ForgeDeps } from "../forges/forge.ts";
import { forgeOf } from "../forges/registry.ts";
import { ForgeApiError } from "../forges/http.ts";
import { DecryptionError } from "../crypto/secret-box.ts";

export const SYNC_FAILED = "integration_sync_failed";

/**
 * An integration as the API shows it. Why a sync failed names hosts and statuses of the
 * instance's network, so only admins (who configure integrations) see it; every role sees
 * whether it failed.
 */
export function integrationView(integration: Integration, viewerIsAdmin: boolean) {
  return {
    ...toPublicIntegration(integration),
    last_sync_error: viewerIsAdmin ? integration.last_sync_error : null,
    last_sync_failed: integration.last_sync_error !== null,
  };
}

/** What a sync stored: how many repositories, and why any was stored in part or left out (boundedRemote). */
export interface SyncResult {
  synced: number;
  warnings: string[];
}

/** Syncs the catalogue; returns how many repositories it stored and why any was not stored whole, or throws ForgeApiError. */
export async function syncRepositories(deps: ForgeDeps & Pick<AppContext, "db">, integration: Integration): Promise<SyncResult> {
  const now = deps.clock.now();
  try {
    const remote = await forgeOf(integration).listRepositories(deps, integration);
    const { stored, warnings } = await upsertRepositories(deps.db, integration, remote, now);
    await recordSync(deps.db, integration.id, now, null);
    await resolveIncident(deps.db, now, "integration", integration.id, SYNC_FAILED);
    return { synced: stored, warnings };
  } catch (error) {
    // A forge's malformed answer can put its own text in a parser's message, so only ForgeApiError's
    // fixed phrases are kept; anything else becomes one sentence.
    const message =
      error instanceof ForgeApiError
        ? error.message
        : error instanceof DecryptionError
          ? "sync failed: the credentials cannot be decrypted with this instance's secret key"
          : "sync failed: the host's answer was not what Roost expected";
    await recordSync(deps.db, integration.id, now, message);
    await raiseIncident(deps.db, now, {
      severity: "warning",
      reason: SYNC_FAILED,
      message,
      repair_action:
        "Check the integration's host URL and credentials, then press Sync now beside it under Administration → Integrations (the API: POST /v1/integrations/{id}/sync).",
      resource_kind: "integration",
      resource_id: integration.id,
      resource_name: integration.name,
    });
    throw error instanceof ForgeApiError || error instanceof DecryptionError ? error : new ForgeApiError(message, null);
  }
}

/**
 * Disconnects a forge in one transaction: its catalogue goes with it (ON DELETE CASCADE), and so do
 * the open incidents about it and its repositories, which nobody could repair any more.
 */
export async function removeIntegration(db: Db, integrationId: string, now: number): Promise<void> {
  await inTransaction(db, async (tx) => {
    const repositories = await repositoryIdsOf(tx, integrationId);
    await deleteIntegration(tx, integrationId);
    await resolveIncidentsOf(tx, now, "integration", [integrationId]);
    await resolveIncidentsOf(tx, now, "repository", repositories);
  });
}
