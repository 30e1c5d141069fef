// Uploading the files that match the pipeline's artifact_patterns (relative to the checkout).
// Each file is read from disk twice as a stream, once for its SHA-256 and once as the request
// body, so an artifact of any size costs a few chunks of memory, never its whole size. A file the
// daemon refuses (too large, a full disk, a bad path) fails the build: its people asked for it.
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { JobRun } from "./job-run.ts";

export async function uploadArtifacts(run: JobRun): Promise<void> {
  if (run.status !== "succeeded" || run.canceled) return;
  const seen = new Set<string>();
  for (const pattern of run.config.artifact_patterns) {
    for await (const path of new Bun.Glob(pattern).scan({ cwd: run.workspace, onlyFiles: true })) {
      if (seen.has(path)) continue;
      seen.add(path);
      const refused = await uploadArtifact(run, path);
      if (refused) {
        run.system("artifacts", `[roost] ${refused}`);
        run.failAfterSteps(refused);
        return;
      }
    }
  }
}

/** Null once the daemon has the file; otherwise why it refused it. */
async function uploadArtifact(run: JobRun, path: string): Promise<string | null> {
  const file = Bun.file(join(run.workspace, path));
  const size = file.size;
  const sha = await sha256OfFile(file);
  const answer = await run.api.uploadArtifact(run.id, path, sha, size, () => file.stream());
  // 409 artifact_exists: a retried upload the daemon already stored.
  if (answer.ok || answer.code === "artifact_exists") {
    run.system("artifacts", `[roost] uploaded ${path} (${size} bytes, sha256 ${sha.slice(0, 12)}…)`);
    return null;
  }
  return `artifact ${path} was refused by Roost: ${answer.status} ${answer.code}: ${answer.message}`;
}

export async function sha256OfFile(file: Blob): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of file.stream()) hash.update(chunk);
  return hash.digest("hex");
}
