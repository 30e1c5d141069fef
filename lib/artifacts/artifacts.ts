// Build artifacts (docs/runners.md "Artifacts"): streamed from the runner to the object store
// (lib/object-store/: the data dir, or an S3-compatible bucket) while their size is counted
// against the limit and their SHA-256 computed, and recorded only once the stored bytes match the
// digest the runner announced. Downloads stream the object, or redirect to a presigned URL.
import { readdir, rm, rmdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Executor, Row } from "../db/client.ts";
import { all, isUniqueViolation, num, one, readInPieces, rowMapper, str } from "../db/client.ts";
import { newId } from "../auth/secrets.ts";
import { fail } from "../http/errors.ts";
import { artifactKey, type ObjectStore } from "../object-store/store.ts";

/** One stored artifact (table artifacts). */
const toArtifact = rowMapper({
  id: str,
  build_id: str,
  path: str,
  size: num,
  sha256: str,
  created_at: num,
});
export type Artifact = ReturnType<typeof toArtifact>;

/** Where the default (disk) object store keeps an artifact. */
export function artifactFile(dataDir: string, buildId: string, id: string): string {
  return join(dataDir, artifactKey(buildId, id));
}

/** A relative path inside the workspace: no leading /, no .., no control characters, ≤ 500 characters. */
export function validArtifactPath(path: string): boolean {
  return path.length > 0 && path.length <= 500 && !path.startsWith("/") && !path.split("/").includes("..") && !/[\p{Cc}\\]/u.test(path);
}

/**
 * Stores one upload durably before it is acknowledged:
 * 1. stream the body to the object store, counting and hashing as it goes (never more than one
 *    chunk in memory); the store makes it durable (an fsynced file renamed into place, or an
 *    object the bucket acknowledged);
 * 2. check the SHA-256 against the announced one before the object counts as stored;
 * 3. record the row.
 * Any failure on the way (a full disk, a refusing bucket, a dropped connection, a mismatch, the
 * database refusing the row) removes whatever it stored, so no object is left that no row describes.
 */
export async function storeArtifact(
  db: Executor,
  objects: ObjectStore,
  o: {
    buildId: string;
    jobId: string;
    path: string;
    body: ReadableStream<Uint8Array> | null;
    expectedSha256: string;
    maxBytes: number;
    declaredLength: number | null;
    now: number;
  },
): Promise<Artifact> {
  if (o.declaredLength !== null && o.declaredLength > o.maxBytes) fail("payload_too_large", `Artifacts are at most ${o.maxBytes} bytes.`);
  if (await one(db, "SELECT 1 FROM artifacts WHERE build_id = ? AND path = ?", [o.buildId, o.path]))
    fail("artifact_exists", `This build already has an artifact ${o.path}.`);
  const id = newId();
  const key = artifactKey(o.buildId, id);
  const { size, sha256 } = await objects.put(key, o.body, {
    maxBytes: o.maxBytes,
    tooLarge: `Artifacts are at most ${o.maxBytes} bytes.`,
    verify({ sha256 }) {
      if (sha256 !== o.expectedSha256.toLowerCase())
        fail("artifact_checksum_mismatch", `The upload's SHA-256 is ${sha256}, not the announced ${o.expectedSha256}; upload again.`);
    },
  });
  try {
    const row = await one(db, "INSERT INTO artifacts (id, build_id, job_id, path, size, sha256, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *", [
      id,
      o.buildId,
      o.jobId,
      o.path,
      size,
      sha256,
      o.now,
    ]);
    return toArtifact(row!);
  } catch (error) {
    await objects.delete(key).catch(() => {});
    if (isUniqueViolation(error)) fail("artifact_exists", `This build already has an artifact ${o.path}.`);
    throw error;
  }
}

/**
 * How old (since its last write) a file under artifacts/ must be before a sweep may take it for
 * abandoned. A running upload writes its .partial at least every idle timeout (30 s,
 * lib/daemon/server.ts) or is cut off, and the runner gives up on one after 30 minutes; a complete file
 * gets its row within milliseconds of its rename. An hour leaves room for both.
 */
export const ABANDONED_FILE_SECONDS = 60 * 60;

/**
 * Removes the files under <data dir>/artifacts that no artifact row refers to, once they are
 * ABANDONED_FILE_SECONDS old: the .partial files of uploads cut short, complete files whose
 * process was killed between the rename and the row (steps 4 and 5 of storeArtifact), and files
 * whose rows went without them (retention deletes rows first and files after; a deleted
 * project's rows go with its builds). Young files are left alone: another daemon process on the
 * same data dir may be writing one, or about to record its row. A build directory left empty
 * whose build no longer exists goes too (no upload can come for it).
 *
 * Run once at start-up (lib/daemon/server.ts), after a crash or a kill is when such files appear; it
 * walks the directory and asks for one build's rows at a time, only where a file is old enough,
 * so requests never pay for it. A database without a single build beside artifact files looks
 * like a data dir paired with the wrong database: then nothing is removed.
 */
export async function removeUnreferencedFiles(db: Executor, dataDir: string, nowSeconds: number): Promise<{ files: number; bytes: number; skipped: boolean }> {
  const root = join(dataDir, "artifacts");
  const removed = { files: 0, bytes: 0, skipped: false };
  const builds = await readdir(root).catch(() => [] as string[]);
  if (builds.length === 0) return removed;
  if (!(await one(db, "SELECT 1 FROM builds LIMIT 1"))) return { ...removed, skipped: true };
  for (const build of builds) {
    const dir = join(root, build);
    const names = await readdir(dir).catch(() => null);
    if (names === null) continue;
    let referenced: Set<string> | null = null;
    let left = names.length;
    for (const name of names) {
      const path = join(dir, name);
      const info = await stat(path).catch(() => null);
      if (!info?.isFile() || info.mtimeMs / 1000 > nowSeconds - ABANDONED_FILE_SECONDS) continue;
      referenced ??= new Set((await all(db, "SELECT id FROM artifacts WHERE build_id = ?", [build])).map((r) => str(r, "id")));
      if (referenced.has(name)) continue;
      await rm(path, { force: true });
      removed.files++;
      removed.bytes += info.size;
      left--;
    }
    if (left === 0 && !(await one(db, "SELECT 1 FROM builds WHERE id = ?", [build]))) await rmdir(dir).catch(() => {});
  }
  return removed;
}

/**
 * A build's artifacts by path, every one. A build uploads one a file its patterns match, with no
 * count limit, a path of up to 500 characters each: thousands pass what a libSQL server answers at
 * once (10 MB), and are then read in smaller requests, each after the last path read.
 */
export async function listArtifacts(db: Executor, buildId: string): Promise<Artifact[]> {
  const rows = await readInPieces(Infinity, (count, last: Row | undefined) =>
    all(db, "SELECT * FROM artifacts WHERE build_id = +? AND path > +? ORDER BY path LIMIT +?", [buildId, last ? str(last, "path") : "", count]),
  );
  return rows.map(toArtifact);
}

export async function findArtifact(db: Executor, buildId: string, id: string): Promise<Artifact | null> {
  const row = await one(db, "SELECT * FROM artifacts WHERE build_id = ? AND id = ?", [buildId, id]);
  return row ? toArtifact(row) : null;
}

/** The artifact's bytes from the object store, or null when they are gone (or not whole). */
export function readArtifact(objects: ObjectStore, a: Artifact): Promise<ReadableStream<Uint8Array> | Blob | null> {
  return objects.get(artifactKey(a.build_id, a.id), a.size);
}
