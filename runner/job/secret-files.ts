// File variables (docs/secrets.md "Secret files"): a keystore, a .p12, a provisioning profile, a
// service-account JSON. Each is written to its own file in a directory only the runner's user
// can enter (0700, outside the workspace, so no artifact pattern can pick it up), readable by
// that user only (0600), and its variable is set to the path. The directory is removed when the
// job ends, before the job is reported finished, and again (idempotent) if the job ends abruptly.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JobRun } from "./job-run.ts";

export function writeSecretFiles(run: JobRun): void {
  if (run.job.files.length === 0) return;
  const dir = mkdtempSync(join(tmpdir(), "roost-job-files-"));
  chmodSync(dir, 0o700);
  run.secretDir = dir;
  for (const file of run.job.files) {
    const path = join(dir, file.key);
    writeFileSync(path, Buffer.from(file.content_base64, "base64"), { mode: 0o600, flag: "wx" });
    run.env[file.key] = path;
  }
  run.system("", `[roost] files written for this job (removed when it ends): ${run.job.files.map((f) => f.key).join(", ")}`);
}

export function removeSecretFiles(run: JobRun): void {
  for (const path of run.cleanupPaths.splice(0)) rmSync(path, { recursive: true, force: true });
  if (run.secretDir) rmSync(run.secretDir, { recursive: true, force: true });
  run.secretDir = null;
}
