// The host releases' pass (lib/daemon/background.ts, every 2 s): claims the approved host_release
// deployments one at a time and makes each (./host-release.ts). A file of its own so that a pass
// that finds nothing to claim imports neither the release nor what it needs (the forges' clients,
// the publishers' and the deployments' schemas) (docs/benchmarks.md, "idle RSS").
import { one, type Row } from "../db/client.ts";
import { newId } from "../auth/secrets.ts";
import type { HostReleaseDeps } from "./host-release.ts";

/** Runs the approved host releases, one at a time; how many it ran. */
export async function publishHostReleases(ctx: HostReleaseDeps, max = 10): Promise<number> {
  // Looked at first with a read: the claim is an UPDATE, which takes the write lock even when it
  // finds nothing, and most passes (every 2 s, on every daemon) find nothing.
  const waiting = await one(ctx.db, "SELECT 1 FROM deployments WHERE status = 'approved' AND publisher_type = 'host_release' LIMIT 1");
  if (!waiting) return 0;
  let ran = 0;
  for (; ran < max; ran++) {
    const claimId = `daemon:${newId()}`;
    const claimed = await claimHostRelease(ctx, claimId);
    if (!claimed) break;
    const [{ runHostRelease }, { toDeployment }] = await Promise.all([import("./host-release.ts"), import("./deployments.ts")]);
    await runHostRelease(ctx, toDeployment(claimed), claimId);
  }
  return ran;
}

/** The oldest approved host release whose target has none running, now running under `claimId`; null when there is none. */
export async function claimHostRelease(ctx: HostReleaseDeps, claimId: string): Promise<Row | null> {
  const now = ctx.clock.now();
  return one(
    ctx.db,
    `UPDATE deployments SET status = 'running', claim_id = ?, lease_expires_at = ?, started_at = ?, updated_at = ?
     WHERE id = (SELECT d.id FROM deployments d WHERE d.status = 'approved' AND d.publisher_type = 'host_release'
                   AND NOT EXISTS (SELECT 1 FROM deployments r WHERE r.status = 'running' AND r.project_id = d.project_id AND r.target = d.target)
                 ORDER BY d.created_at, d.rowid LIMIT 1)
       AND status = 'approved' RETURNING *`,
    [claimId, now + ctx.config.runners.leaseSeconds, now, now],
  );
}
