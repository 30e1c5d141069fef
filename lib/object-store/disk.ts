// The default object store: files under the data directory, named by their keys
// (<data dir>/artifacts/<build_id>/<artifact_id>, as before the port existed).
import { mkdir, open, readdir, rename, rm, rmdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { ObjectStore, PutOptions, StoredObject } from "./store.ts";
import { eachChunk } from "./chunks.ts";

/** Writes in progress are kept beside their final name with this suffix, then renamed. */
export const PARTIAL_SUFFIX = ".partial";

export function openDiskStore(root: string): ObjectStore {
  const path = (key: string) => join(root, key);
  return {
    kind: "disk",
    put: (key, body, o) => putFile(path(key), body, o),
    async get(key, size) {
      const info = await stat(path(key)).catch(() => null);
      if (!info?.isFile() || (size !== undefined && info.size !== size)) return null;
      return Bun.file(path(key));
    },
    async bytes(key) {
      const file = Bun.file(path(key));
      return (await file.exists()) ? new Uint8Array(await file.arrayBuffer()) : null;
    },
    presign: () => null,
    async delete(key) {
      await rm(path(key), { force: true });
      // The build's directory goes with its last file (it fails, harmlessly, while others are left).
      await rmdir(dirname(path(key))).catch(() => {});
    },
    async list({ prefix, after, limit }) {
      const objects: StoredObject[] = [];
      await listFiles(path(prefix), prefix, after ?? "", objects, limit);
      return { objects, next: objects.length === limit ? objects.at(-1)!.key : null };
    },
  };
}

/**
 * The files under `dir` (whose key prefix is `keyPrefix`) with keys after `after`, in key order, into
 * `out` until it holds `limit`. A directory sorts as its name and "/", as its files' keys do, so the
 * walk is in the order of the whole keys; a directory whose every key comes before `after` is not read.
 */
async function listFiles(dir: string, keyPrefix: string, after: string, out: StoredObject[], limit: number): Promise<boolean> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const named = entries
    .filter((e) => e.isDirectory() || e.isFile())
    .map((e) => ({ e, key: keyPrefix + e.name + (e.isDirectory() ? "/" : "") }))
    .sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
  for (const { e, key } of named) {
    if (e.isDirectory()) {
      if (key <= after && !after.startsWith(key)) continue;
      if (await listFiles(join(dir, e.name), key, after, out, limit)) return true;
      continue;
    }
    if (key <= after) continue;
    const info = await stat(join(dir, e.name)).catch(() => null);
    if (!info?.isFile()) continue;
    out.push({ key, size: info.size, modifiedAt: info.mtimeMs / 1000 });
    if (out.length >= limit) return true;
  }
  return false;
}

/**
 * 1. stream the body to `<file>.partial`, counting and hashing as it goes;
 * 2. fsync the file and check that it holds every byte received;
 * 3. let the caller verify the size and digest;
 * 4. rename it to its final name and fsync the directory, so the name survives a crash
 *    (rename(2) is atomic; the directory entry is durable only once the directory is synced).
 * Any failure on the way (a full disk, a dropped connection, a mismatch) removes the partial file;
 * a full disk propagates as it is (lib/http/app.ts answers 507 and /readyz learns of it).
 */
async function putFile(file: string, body: ReadableStream<Uint8Array> | Uint8Array | null, o: PutOptions): Promise<{ size: number; sha256: string }> {
  const partial = file + PARTIAL_SUFFIX;
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  try {
    const handle = await open(partial, "wx", 0o600);
    let written: { size: number; sha256: string };
    try {
      written = await eachChunk(body, o, async (chunk) => {
        // write(2) may take fewer bytes than offered; a full disk then fails with ENOSPC.
        for (let offset = 0; offset < chunk.byteLength; ) offset += (await handle.write(chunk, offset, chunk.byteLength - offset)).bytesWritten;
      });
      await handle.sync();
      const onDisk = (await handle.stat()).size;
      if (onDisk !== written.size) throw new Error(`file holds ${onDisk} bytes after fsync, ${written.size} were received`);
    } finally {
      await handle.close();
    }
    o.verify?.(written);
    await rename(partial, file);
    await syncDirectory(dirname(file));
    return written;
  } catch (error) {
    await rm(partial, { force: true }).catch(() => {});
    throw error;
  }
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
