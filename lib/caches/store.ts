// Dependency caches shared by every runner of a project (docs/runners.md "Shared caches"): one
// archive per entry in the object store (caches/<project_id>/<id>), one row in cache_entries.
// Entries are immutable, as actions/cache's are (https://github.com/actions/cache): a key names its
// contents, so a second save of the same key in the same scope is 409 cache_exists. Uploads are
// verified against the SHA-256 the runner announced before their row is written (as artifacts,
// lib/artifacts/artifacts.ts); retention deletes rows first and objects after, so no row names a missing
// object on purpose.
import type { Executor } from "../db/client.ts";
import { all, isUniqueViolation, num, one, rowMapper, run, str } from "../db/client.ts";
import { newId } from "../auth/secrets.ts";
import { fail } from "../http/errors.ts";
import type { ObjectStore } from "../object-store/store.ts";
import type { Logger } from "../daemon/log.ts";
import { scopeNearness } from "../runners/cache-scope.ts";

/** One saved cache (table cache_entries). */
const toCacheEntry = rowMapper({
  id: str,
  project_id: str,
  pipeline_id: str,
  scope: str,
  key: str,
  version: str,
  size: num,
  sha256: str,
  created_at: num,
  last_used_at: num,
});
export type CacheEntry = ReturnType<typeof toCacheEntry>;

export function cacheObjectKey(projectId: string, id: string): string {
  return `caches/${projectId}/${id}`;
}

/** The build a cache request is for: its project and pipeline, its scope and its project's default branch. */
export interface CacheReader {
  projectId: string;
  pipelineId: string;
  scope: string;
  defaultBranch: string;
}

/**
 * The entry a build restores: the one with its key in the nearest scope it may read, else the
 * newest of the same version in the nearest scope (actions/cache's restore-keys fallback, where
 * the version is the paths and the platform), of its own pipeline before the project's others.
 */
export async function findCacheForBuild(db: Executor, reader: CacheReader, key: string, version: string): Promise<(CacheEntry & { exact: boolean }) | null> {
  const row = await one(
    db,
    // `+?`: with bare parameters beside the ORDER BY, SQLite compiled this statement again on every
    // call (35 against 6 µs alone; tests/lib/db/bound-parameters.test.ts).
    `SELECT *, key = +? AS exact FROM cache_entries
      WHERE project_id = +? AND version = +? AND (scope = +? OR scope = +? OR (+? AND scope LIKE 'tag:%'))
      ORDER BY exact DESC, CASE scope WHEN +? THEN 0 WHEN +? THEN 1 ELSE 2 END, pipeline_id = +? DESC, created_at DESC, id
      LIMIT 1`,
    [
      key,
      reader.projectId,
      version,
      reader.scope,
      reader.defaultBranch,
      reader.scope.startsWith("tag:") ? 1 : 0,
      reader.scope,
      reader.defaultBranch,
      reader.pipelineId,
    ],
  );
  return row ? { ...toCacheEntry(row), exact: num(row, "exact") === 1 } : null;
}

/** One entry the build may read (its project's, in a scope it may read), or null. */
export async function findReadableCache(db: Executor, reader: CacheReader, id: string): Promise<CacheEntry | null> {
  const row = await one(db, "SELECT * FROM cache_entries WHERE id = ? AND project_id = ?", [id, reader.projectId]);
  const entry = row ? toCacheEntry(row) : null;
  return entry && scopeNearness(entry.scope, reader.scope, reader.defaultBranch) !== null ? entry : null;
}

export async function touchCache(db: Executor, id: string, now: number): Promise<void> {
  await run(db, "UPDATE cache_entries SET last_used_at = ? WHERE id = ? AND last_used_at < ?", [now, id, now]);
}

/**
 * Saves one archive in the build's own scope:
 * 1. refuse a key the scope already has (409 cache_exists) before reading the body;
 * 2. stream it to the object store, counted against the per-project cap and hashed;
 * 3. check the SHA-256 before the object counts as stored;
 * 4. record the row (a concurrent save of the same key loses here, and its object goes);
 * 5. evict the project's least recently used entries beyond its cap.
 */
export async function storeCache(
  db: Executor,
  objects: ObjectStore,
  log: Logger,
  o: {
    writer: Omit<CacheReader, "defaultBranch">;
    key: string;
    version: string;
    body: ReadableStream<Uint8Array> | null;
    expectedSha256: string;
    maxBytes: number;
    declaredLength: number | null;
    now: number;
  },
): Promise<CacheEntry> {
  const tooLarge = `A cache archive is at most ${o.maxBytes} bytes (ROOST_SHARED_CACHE_MAX_MB).`;
  if (o.declaredLength !== null && o.declaredLength > o.maxBytes) fail("payload_too_large", tooLarge);
  const exists = () => fail("cache_exists", `This build's scope ${o.writer.scope} already has a cache with key ${o.key}; entries are never overwritten.`);
  if (await one(db, "SELECT 1 FROM cache_entries WHERE project_id = ? AND scope = ? AND key = ?", [o.writer.projectId, o.writer.scope, o.key])) exists();
  const id = newId();
  const objectKey = cacheObjectKey(o.writer.projectId, id);
  const { size, sha256 } = await objects.put(objectKey, o.body, {
    maxBytes: o.maxBytes,
    tooLarge,
    verify({ sha256 }) {
      if (sha256 !== o.expectedSha256.toLowerCase())
        fail("cache_checksum_mismatch", `The upload's SHA-256 is ${sha256}, not the announced ${o.expectedSha256}; upload again.`);
    },
  });
  let entry: CacheEntry;
  try {
    const row = await one(
      db,
      `INSERT INTO cache_entries (id, project_id, pipeline_id, scope, key, version, size, sha256, created_at, last_used_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
      [id, o.writer.projectId, o.writer.pipelineId, o.writer.scope, o.key, o.version, size, sha256, o.now, o.now],
    );
    entry = toCacheEntry(row!);
  } catch (error) {
    await objects.delete(objectKey).catch(() => {});
    if (isUniqueViolation(error)) exists();
    throw error;
  }
  await evictCaches(db, objects, log, { projectId: o.writer.projectId, maxBytes: o.maxBytes, keep: id });
  return entry;
}

/**
 * Deletes entries with their archives: every entry no build restored since `unusedBefore`, or, of
 * one project, the least recently used ones (never `keep`) until the rest fit in `maxBytes`.
 * Returns how many went. Rows first, then objects: a crash between leaves objects no row names.
 */
export async function evictCaches(
  db: Executor,
  objects: ObjectStore,
  log: Logger,
  o: { unusedBefore: number } | { projectId: string; maxBytes: number; keep?: string },
): Promise<number> {
  let doomed: { id: string; project_id: string }[];
  if ("unusedBefore" in o) {
    doomed = (await all(db, "SELECT id, project_id FROM cache_entries WHERE last_used_at < ? ORDER BY last_used_at LIMIT 500", [o.unusedBefore])).map((r) => ({
      id: str(r, "id"),
      project_id: str(r, "project_id"),
    }));
  } else {
    // The total is kept by triggers (schema.sql migration 38): a project under its cap reads one
    // row; one over it reads its least recently used entries only until enough are found.
    let total = num((await one(db, "SELECT bytes FROM cache_project_bytes WHERE project_id = ?", [o.projectId])) ?? { bytes: 0 }, "bytes");
    doomed = [];
    for (let after: [number, string] = [-1, ""]; total > o.maxBytes; ) {
      const rows = await all(
        db,
        "SELECT id, size, last_used_at FROM cache_entries WHERE project_id = +? AND (last_used_at, id) > (?, ?) ORDER BY last_used_at, id LIMIT 50",
        [o.projectId, after[0], after[1]],
      );
      for (const r of rows) {
        if (total <= o.maxBytes) break;
        if (str(r, "id") === o.keep) continue;
        doomed.push({ id: str(r, "id"), project_id: o.projectId });
        total -= num(r, "size");
      }
      if (rows.length < 50) break;
      const last = rows[rows.length - 1]!;
      after = [num(last, "last_used_at"), str(last, "id")];
    }
  }
  for (const d of doomed) {
    await run(db, "DELETE FROM cache_entries WHERE id = ?", [d.id]);
    await objects.delete(cacheObjectKey(d.project_id, d.id)).catch((error: unknown) => {
      log.warn("could not delete a shared cache archive", { project_id: d.project_id, cache_id: d.id, error });
    });
  }
  return doomed.length;
}
