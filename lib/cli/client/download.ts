// Downloading a build's artifacts: each streamed to a temporary file beside its target while its
// SHA-256 is computed, compared with the digest Roost recorded at upload (the listing's sha256 and
// the X-Roost-Artifact-SHA256 header), and only then renamed into place, so a target never holds
// a partial or corrupted file.
import { mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, normalize, resolve } from "node:path";
import { Api, CommandFailure, EXIT, refusal } from "./api.ts";

import type { Artifact } from "./resources.ts";

/** Where each artifact goes under `dir`: its file name, or its whole relative path with `keepPaths`. */
export function targetsFor(artifacts: Artifact[], dir: string, keepPaths: boolean): string[] {
  const targets = artifacts.map((a) => {
    const relative = keepPaths ? normalize(a.path) : basename(a.path);
    // The path comes from the build's workspace; it never leaves the chosen directory.
    if (isAbsolute(relative) || relative.split("/").includes("..")) {
      throw new CommandFailure(`roost: artifact path '${a.path}' would leave ${dir}; nothing was written`, EXIT.refused);
    }
    return resolve(dir, relative);
  });
  const seen = new Map<string, string>();
  artifacts.forEach((a, i) => {
    const other = seen.get(targets[i]!);
    if (other !== undefined) {
      throw new CommandFailure(
        `roost: '${other}' and '${a.path}' would both be written to ${targets[i]}; use --keep-paths or --match; nothing was written`,
        EXIT.usage,
      );
    }
    seen.set(targets[i]!, a.path);
  });
  return targets;
}

/** Downloads one artifact to `target` (replacing a file there only once the download checks out). */
export async function downloadArtifact(api: Api, artifact: Artifact, target: string): Promise<void> {
  const response = await api.fetch(`/v1/builds/${encodeURIComponent(artifact.build_id)}/artifacts/${encodeURIComponent(artifact.id)}`, {
    headers: { accept: "application/octet-stream" },
  });
  if (!response.ok || !response.body) throw await refusal(response, `GET artifact ${artifact.path}`);
  const announced = response.headers.get("x-roost-artifact-sha256");
  await mkdir(dirname(target), { recursive: true });
  const partial = join(dirname(target), `.${basename(target)}.${crypto.randomUUID().slice(0, 8)}.part`);
  const file = await open(partial, "wx", 0o644);
  const hasher = new Bun.CryptoHasher("sha256");
  let size = 0;
  try {
    try {
      for await (const chunk of response.body) {
        hasher.update(chunk);
        size += chunk.byteLength;
        await file.write(chunk);
      }
    } catch (error) {
      throw new CommandFailure(
        `roost: the download of ${artifact.path} broke off after ${size} bytes (${(error as { code?: string }).code ?? String(error)}); nothing was written`,
        EXIT.unreachable,
      );
    } finally {
      await file.close();
    }
    const digest = hasher.digest("hex");
    if (digest !== artifact.sha256 || (announced !== null && announced !== artifact.sha256) || size !== artifact.size) {
      throw new CommandFailure(
        `roost: ${artifact.path}: checksum mismatch: Roost recorded sha256 ${artifact.sha256} (${artifact.size} bytes), the download has ${digest} (${size} bytes); nothing was written`,
        EXIT.checksum,
      );
    }
    await rename(partial, target);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}
