// The workspace's disk limit (docs/runners.md "Limits"). Bind-mounted directories have no quota
// the engines can set on every filesystem (Podman's and Docker's --storage-opt size= covers only
// the container's own layer, on XFS with project quotas), so the runner measures what the build
// has written, its workspace and its cache homes, every DISK_CHECK_MS with du(1), and stops a
// build past its limit like a timeout: it fails with a sentence saying so. A build can go past the
// limit by what it writes between two checks.
import { formatMebibytes } from "./limits.ts";
import type { JobRun } from "../job/job-run.ts";
import { cacheHomes } from "../job/cache.ts";

export const DISK_CHECK_MS = 5000;

/** Starts watching when the build's container has a disk limit; null otherwise. */
export function watchDisk(run: JobRun, everyMs = DISK_CHECK_MS): { stop(): void } | null {
  const limit = run.container?.record().limits?.disk_mb ?? null;
  if (limit === null || run.status !== "succeeded") return null;
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      const used = await usedMebibytes([run.workspace, cacheHomes(run)]);
      if (used !== null && used > limit)
        run.stopFailing(`the build used more disk than its limit (${formatMebibytes(used)} written, limit ${formatMebibytes(limit)})`, 1);
    } finally {
      busy = false;
    }
  }, everyMs);
  return { stop: () => clearInterval(timer) };
}

/** What the directories hold together, in MiB (du -s -k, links not followed, one filesystem). */
export async function usedMebibytes(dirs: string[]): Promise<number | null> {
  const p = Bun.spawn(["du", "-s", "-k", "-x", "-c", ...dirs], { stdout: "pipe", stderr: "ignore" });
  const [out] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  const total = /^(\d+)\s+total$/m.exec(out);
  return total ? Math.ceil(Number(total[1]) / 1024) : null;
}
