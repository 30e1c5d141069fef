// Uploading the files that match the pipeline's artifact_patterns (relative to the checkout).
// Each file is read from disk twice as a stream, once for its SHA-256 and once as the request
// body, so an artifact of any size costs a few chunks of memory, never its whole size. A file the
// daemon refuses (too large, a full disk, a bad path) fails the build: its people asked for it.
//
// Nothing outside the job's workspace is ever uploaded. A checkout can commit symbolic links
// (git stores them as links, https://git-scm.com/docs/git-config#Documentation/git-config.txt-coresymlinks),
// and a glob hands them back when a pattern names one or runs through a linked directory, so
// every match is resolved to its real path first: one that leaves the workspace (a link to
// /etc/passwd, to the runner's home, a pattern with .. or an absolute path) is skipped with a
// line in the build log, and the upload reads the resolved file. The build's processes are
// stopped before uploads start (run-job.ts), so nothing can swap a link between the check and
// the read.
import { createHash } from "node:crypto";
import { realpath, stat } from "node:fs/promises";
import { resolve, sep } from "node:path";
import type { JobRun } from "./job-run.ts";

export async function uploadArtifacts(run: JobRun): Promise<void> {
  if (run.status !== "succeeded" || run.canceled) return;
  const workspace = await realpath(run.workspace);
  const seen = new Set<string>();
  for (const pattern of run.config.artifact_patterns) {
    for await (const path of new Bun.Glob(pattern).scan({ cwd: run.workspace, onlyFiles: true })) {
      if (seen.has(path)) continue;
      seen.add(path);
      const file = await fileInside(workspace, path);
      if ("skipped" in file) {
        run.system("artifacts", `[roost] skipped ${path}: ${file.skipped}`);
        continue;
      }
      const refused = await uploadArtifact(run, path, file.real);
      if (refused) {
        run.system("artifacts", `[roost] ${refused}`);
        run.failAfterSteps(refused);
        return;
      }
    }
  }
}

/** The real path of a match when it is a regular file inside the (real) workspace; otherwise why it is skipped. */
async function fileInside(workspace: string, path: string): Promise<{ real: string } | { skipped: string }> {
  const real = await realpath(resolve(workspace, path)).catch(() => null);
  if (real === null) return { skipped: "it no longer exists or is a broken link" };
  if (!real.startsWith(workspace + sep))
    return { skipped: "it is outside the workspace (a link or a path that leaves it); only files inside the workspace are uploaded" };
  if (!(await stat(real)).isFile()) return { skipped: "it is not a regular file" };
  return { real };
}

/** Null once the daemon has the file; otherwise why it refused it. */
async function uploadArtifact(run: JobRun, path: string, real: string): Promise<string | null> {
  const file = Bun.file(real);
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
