// Objects no row refers to (docs/operations.md "Object storage"): an upload whose bytes reached the
// store but whose row was never committed (the daemon killed between the two, a SHA-256 mismatch
// whose delete failed), an archived log or artifact whose row retention deleted while the store
// refused the delete. Nothing else would ever remove them. A background pass lists one page of
// Roost's keys at a time, after where the previous pass stopped, and deletes those that are old
// enough and that no row names; at the end of the listing it starts over. Its cost is one list
// request and two reads per pass, however many objects the store holds.
import type { AppContext } from "../http/context.ts";
import { all, num, one, run, str } from "../db/client.ts";
import { ABANDONED_FILE_SECONDS } from "../artifacts/artifacts.ts";
import type { StoredObject } from "./store.ts";

/** The prefixes swept, in turn: every key Roost writes is under one of them. */
const PREFIXES = ["artifacts/", "logs/", "caches/"] as const;
/** Keys listed per pass (S3 answers at most 1000 per request). */
const SWEEP_PAGE = 1000;

/** Where the next pass lists from: a prefix and the last key seen under it. */
export interface SweepCursor {
  prefix: number;
  after: string | undefined;
}

export const SWEEP_START: SweepCursor = { prefix: 0, after: undefined };

/**
 * One pass: one page of keys under the cursor's prefix. Only objects last written more than
 * ABANDONED_FILE_SECONDS ago are candidates (an upload in progress, or one whose row is being
 * committed, is younger). An artifact object is kept while its artifacts row exists; an archived
 * log while its build exists and retention has not deleted its log (a log archived twice is
 * rewritten in place, so its object is never deleted while it may still be marked archived); a
 * shared cache archive while its cache_entries row exists (a save whose row lost to a concurrent
 * one, or never came, leaves an archive nobody restores). A
 * database without a single build beside objects looks like a store paired with the wrong database:
 * then nothing is deleted. Keys of other shapes are left alone.
 */
export async function sweepOrphanedObjects(
  ctx: Pick<AppContext, "db" | "objects" | "clock" | "log">,
  cursor: SweepCursor,
  limit = SWEEP_PAGE,
): Promise<{ deleted: number; bytes: number; next: SweepCursor }> {
  const prefix = PREFIXES[cursor.prefix % PREFIXES.length]!;
  const page = await ctx.objects.list({ prefix, after: cursor.after, limit });
  const next: SweepCursor =
    page.next === null ? { prefix: (cursor.prefix + 1) % PREFIXES.length, after: undefined } : { prefix: cursor.prefix, after: page.next };
  const old = page.objects.filter((o) => o.modifiedAt <= ctx.clock.now() - ABANDONED_FILE_SECONDS);
  const result = { deleted: 0, bytes: 0, next };
  if (old.length === 0 || !(await one(ctx.db, "SELECT 1 FROM builds LIMIT 1"))) return result;
  const orphans =
    prefix === "artifacts/" ? await orphanedArtifacts(ctx.db, old) : prefix === "logs/" ? await orphanedLogs(ctx.db, old) : await orphanedCaches(ctx.db, old);
  for (const o of orphans) {
    try {
      await ctx.objects.delete(o.key);
    } catch (error) {
      ctx.log.warn("could not delete an object no row refers to", { key: o.key, error });
      continue;
    }
    result.deleted++;
    result.bytes += o.size;
  }
  if (result.deleted) ctx.log.info("deleted objects no row refers to", { objects: result.deleted, bytes: result.bytes });
  return result;
}

/** How long a daemon holds the shared cursor for its pass; one killed mid-pass lets it go by expiry. */
export const SWEEP_LEASE_SECONDS = 300;

/**
 * The pass of whichever daemon gets the turn. The cursor is one row shared by every daemon on the
 * database (schema.sql migration 39): taken for the pass, then moved on, so several daemons walk
 * the store once between them instead of once each. Null when another daemon holds it.
 */
export async function sweepNextPage(
  ctx: Pick<AppContext, "db" | "objects" | "clock" | "log">,
  owner: string,
  limit = SWEEP_PAGE,
): Promise<{ deleted: number; bytes: number; next: SweepCursor } | null> {
  const now = ctx.clock.now();
  const taken = await one(
    ctx.db,
    "UPDATE object_sweep SET taken_by = ?, taken_until = ? WHERE id = 1 AND (taken_until IS NULL OR taken_until < ?) RETURNING prefix, after_key",
    [owner, now + SWEEP_LEASE_SECONDS, now],
  );
  if (!taken) return null;
  const release = (next?: SweepCursor) =>
    run(
      ctx.db,
      next
        ? "UPDATE object_sweep SET prefix = ?, after_key = ?, taken_by = NULL, taken_until = NULL WHERE id = 1 AND taken_by = ?"
        : "UPDATE object_sweep SET taken_by = NULL, taken_until = NULL WHERE id = 1 AND taken_by = ?",
      next ? [next.prefix, next.after ?? null, owner] : [owner],
    );
  try {
    const cursor = { prefix: num(taken, "prefix"), after: taken.after_key === null ? undefined : str(taken, "after_key") };
    const result = await sweepOrphanedObjects(ctx, cursor, limit);
    await release(result.next);
    return result;
  } catch (error) {
    await release().catch(() => {});
    throw error;
  }
}

/** `artifacts/<build_id>/<artifact_id>` (or a disk store's `.partial` beside it) without its artifacts row. */
async function orphanedArtifacts(db: AppContext["db"], objects: StoredObject[]): Promise<StoredObject[]> {
  const parsed = objects.flatMap((o) => {
    const m = /^artifacts\/([^/]+)\/([^/]+)$/.exec(o.key);
    return m ? [{ o, build: m[1]!, id: m[2]! }] : [];
  });
  const builds = [...new Set(parsed.map((p) => p.build))];
  if (builds.length === 0) return [];
  const rows = await all(db, `SELECT build_id, id FROM artifacts WHERE build_id IN (${builds.map(() => "?").join(", ")})`, builds);
  const kept = new Set(rows.map((r) => `${str(r, "build_id")}/${str(r, "id")}`));
  return parsed.filter((p) => !kept.has(`${p.build}/${p.id}`)).map((p) => p.o);
}

/** `logs/<build_id>.jsonl.gz` whose build is gone or whose log retention deleted. */
async function orphanedLogs(db: AppContext["db"], objects: StoredObject[]): Promise<StoredObject[]> {
  const parsed = objects.flatMap((o) => {
    const m = /^logs\/([^/]+)\.jsonl\.gz$/.exec(o.key);
    return m ? [{ o, build: m[1]! }] : [];
  });
  if (parsed.length === 0) return [];
  const builds = [...new Set(parsed.map((p) => p.build))];
  const rows = await all(db, `SELECT id FROM builds WHERE logs_deleted_at IS NULL AND id IN (${builds.map(() => "?").join(", ")})`, builds);
  const kept = new Set(rows.map((r) => str(r, "id")));
  return parsed.filter((p) => !kept.has(p.build)).map((p) => p.o);
}

/** `caches/<project_id>/<id>` (a shared dependency cache, lib/caches/store.ts) without its cache_entries row. */
async function orphanedCaches(db: AppContext["db"], objects: StoredObject[]): Promise<StoredObject[]> {
  const parsed = objects.flatMap((o) => {
    const m = /^caches\/([^/]+)\/([^/]+)$/.exec(o.key);
    return m ? [{ o, project: m[1]!, id: m[2]! }] : [];
  });
  if (parsed.length === 0) return [];
  const rows = await all(
    db,
    `SELECT project_id, id FROM cache_entries WHERE id IN (${parsed.map(() => "?").join(", ")})`,
    parsed.map((p) => p.id),
  );
  const kept = new Set(rows.map((r) => `${str(r, "project_id")}/${str(r, "id")}`));
  return parsed.filter((p) => !kept.has(`${p.project}/${p.id}`)).map((p) => p.o);
}
