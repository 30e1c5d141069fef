// What runners may take next: queued builds, oldest first, whose pipeline has a free slot under
// max_concurrent (extra builds wait queued, never dropped). The claim itself re-checks the slot
// in the same conditional UPDATE, so two runners cannot both fill the last slot.
import type { Executor } from "../db/client.ts";
import { all } from "../db/client.ts";
import { toBuild, type Build } from "../db/builds.ts";

/**
 * The SQL condition "this queued build's pipeline has a free slot", for claims to reuse. A build
 * defined by the pipeline file uses the file's max_concurrent (frozen in its snapshot); others the
 * pipeline's current one.
 */
export const PIPELINE_HAS_FREE_SLOT = `(SELECT COUNT(*) FROM builds r WHERE r.pipeline_id = b.pipeline_id AND r.status = 'running')
  < CASE WHEN json_extract(b.definition_source, '$.source') = 'file' THEN json_extract(b.config_snapshot, '$.concurrency.max_concurrent')
    ELSE (SELECT p.max_concurrent FROM pipelines p WHERE p.id = b.pipeline_id) END`;

export async function listClaimableBuilds(db: Executor, limit: number): Promise<Build[]> {
  const rows = await all(db, `SELECT b.* FROM builds b WHERE b.status = 'queued' AND ${PIPELINE_HAS_FREE_SLOT} ORDER BY b.queued_at, b.build_number LIMIT ?`, [limit]);
  return rows.map(toBuild);
}
