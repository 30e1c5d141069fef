// Build artifacts (docs/runners.md "Artifacts"): streamed from the runner to a file under the
// data dir while their size is counted against the limit and their SHA-256 computed, then
// recorded only when the digest matches the one the runner announced. Downloads stream the file.
import { createHash } from "node:crypto";
import { mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Row } from "./db/database.ts";
import type { Executor } from "./db/client.ts";
import { all, num, one, str } from "./db/client.ts";
import { newId } from "./auth/secrets.ts";
import { fail } from "./errors.ts";

export interface Artifact {
  id: string;
  build_id: string;
  path: string;
  size: number;
  sha256: string;
  created_at: number;
}

function toArtifact(row: Row): Artifact {
  return { id: str(row, "id"), build_id: str(row, "build_id"), path: str(row, "path"), size: num(row, "size"), sha256: str(row, "sha256"), created_at: num(row, "created_at") };
}

export function artifactFile(dataDir: string, buildId: string, id: string): string {
  return join(dataDir, "artifacts", buildId, id);
}

/** A relative path inside the workspace: no leading /, no .., no control characters, ≤ 500 characters. */
export function validArtifactPath(path: string): boolean {
  return path.length > 0 && path.length <= 500 && !path.startsWith("/") && !path.split("/").includes("..") && !/[\p{Cc}\\]/u.test(path);
}

export async function storeArtifact(
  db: Executor,
  o: { dataDir: string; buildId: string; jobId: string; path: string; body: ReadableStream<Uint8Array> | null; expectedSha256: string; maxBytes: number; declaredLength: number | null; now: number },
): Promise<Artifact> {
  if (o.declaredLength !== null && o.declaredLength > o.maxBytes) fail("payload_too_large", `Artifacts are at most ${o.maxBytes} bytes.`);
  if (await one(db, "SELECT 1 FROM artifacts WHERE build_id = ? AND path = ?", [o.buildId, o.path])) fail("artifact_exists", `This build already has an artifact ${o.path}.`);
  const id = newId();
  const file = artifactFile(o.dataDir, o.buildId, id);
  mkdirSync(join(o.dataDir, "artifacts", o.buildId), { recursive: true, mode: 0o700 });
  const writer = Bun.file(file).writer();
  const hash = createHash("sha256");
  let size = 0;
  try {
    if (o.body) {
      for await (const chunk of o.body) {
        size += chunk.byteLength;
        if (size > o.maxBytes) fail("payload_too_large", `Artifacts are at most ${o.maxBytes} bytes.`);
        hash.update(chunk);
        writer.write(chunk);
      }
    }
    await writer.end();
  } catch (error) {
    await Promise.resolve(writer.end()).catch(() => {});
    rmSync(file, { force: true });
    throw error;
  }
  const digest = hash.digest("hex");
  if (digest !== o.expectedSha256.toLowerCase()) {
    rmSync(file, { force: true });
    fail("artifact_checksum_mismatch", `The upload's SHA-256 is ${digest}, not the announced ${o.expectedSha256}; upload again.`);
  }
  const row = await one(db, "INSERT INTO artifacts (id, build_id, job_id, path, size, sha256, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *", [id, o.buildId, o.jobId, o.path, size, digest, o.now]);
  return toArtifact(row!);
}

export async function listArtifacts(db: Executor, buildId: string): Promise<Artifact[]> {
  return (await all(db, "SELECT * FROM artifacts WHERE build_id = ? ORDER BY path", [buildId])).map(toArtifact);
}

export async function findArtifact(db: Executor, buildId: string, id: string): Promise<Artifact | null> {
  const row = await one(db, "SELECT * FROM artifacts WHERE build_id = ? AND id = ?", [buildId, id]);
  return row ? toArtifact(row) : null;
}

export function artifactExists(dataDir: string, a: Artifact): boolean {
  try {
    return statSync(artifactFile(dataDir, a.build_id, a.id)).size === a.size;
  } catch {
    return false;
  }
}
