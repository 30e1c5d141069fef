// File variables (docs/secrets.md "Secret files"): a keystore, a .p12, a provisioning profile, a
// service-account JSON. Each is written to its own file in a directory only the runner's user
// can enter (0700, outside the workspace, so no artifact pattern can pick it up), readable by
// that user only (0600), and its variable is set to the path. The directory is removed when the
// job ends, before the job is reported finished, and again (idempotent) if the job ends abruptly.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JobRun } from "./job-run.ts";
import { iosSigningInputs, setUpKeychain, SigningError, tearDownKeychain } from "./ios-signing.ts";

export function writeSecretFiles(run: JobRun): void {
  if (run.job.files.length === 0) return;
  if (run.container) {
    // In a container they are written into its tmpfs when it starts (executors/container.ts).
    for (const file of run.job.files) run.env[file.key] = run.container.filePath(file.key);
    run.system("", `[roost] files for this job (in the build container's memory, gone with it): ${run.job.files.map((f) => f.key).join(", ")}`);
    return;
  }
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
  if (run.keychain) {
    const problems = tearDownKeychain(run.keychain, run.env);
    run.keychain = null;
    run.system(
      "",
      problems.length
        ? `[roost] removing the build's keychain: ${problems.join("; ")}`
        : "[roost] the build's keychain was deleted and its provisioning profiles removed",
    );
  }
  for (const path of run.cleanupPaths.splice(0)) rmSync(path, { recursive: true, force: true });
  if (run.secretDir) rmSync(run.secretDir, { recursive: true, force: true });
  run.secretDir = null;
}

/**
 * On a macOS runner, for a build of iOS or macOS with the signing variables: the build's own
 * keychain and profiles (ios-signing.ts). A failure fails the build before its steps.
 */
export function setUpAppleSigning(run: JobRun): void {
  if (process.platform !== "darwin" || !run.config.platforms.some((p) => p === "ios" || p === "macos")) return;
  const inputs = iosSigningInputs(
    run.env,
    run.job.files.map((f) => f.key),
  );
  if (!inputs || !run.secretDir) return;
  try {
    run.keychain = setUpKeychain({ security: "security", dir: run.secretDir, home: run.env.HOME ?? process.env.HOME ?? "/tmp", env: run.env, inputs });
    run.secrets.unshift(run.keychain.password);
    run.system(
      "",
      `[roost] certificate imported into a keychain for this build; ${inputs.profiles.length} provisioning profile(s) installed (removed when the job ends)`,
    );
  } catch (error) {
    if (!(error instanceof SigningError)) throw error;
    run.system("", `[roost] iOS/macOS signing: ${error.message}`);
    run.failAfterSteps(`iOS/macOS signing could not be set up: ${error.message}`);
  }
}
