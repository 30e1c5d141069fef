// Clean-up that survives anything (docs/runners.md "Clean-up"). A job's container is removed when
// the job ends, also when it is canceled, times out or the runner is stopped; but a runner killed
// with SIGKILL (or a host that lost power) leaves its container running. So a container runner,
// when it starts and after each job, removes every container labelled with its runner id that
// does not belong to the job it is running (with --volumes: anonymous volumes an image declared
// go too; a build's service containers before it), and the workspaces, cache homes and SDK overlays of jobs it no longer runs. Containers are found by
// label, never by name, so another runner's (another roost.runner label) are left alone.
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { engineCall, engineError, type Engine } from "./engine.ts";
import type { Log } from "../client.ts";

/** Removes this runner's containers, workspaces and cache homes, except `keep` (a job id it runs); returns the job ids removed. */
export async function removeLeftovers(engine: Engine, runnerId: string, workDir: string, log: Log, keep: string | null = null): Promise<string[]> {
  const listed = await engineCall(engine, [
    "ps",
    "--all",
    "--filter",
    `label=roost.runner=${runnerId}`,
    "--format",
    // Docker's ps gives Labels as one string and has .Label for one; Podman's gives a map.
    engine.name === "docker"
      ? '{{.ID}} {{.Label "roost.job"}} {{.Label "roost.service"}}'
      : '{{.ID}} {{index .Labels "roost.job"}} {{index .Labels "roost.service"}}',
  ]);
  const removed: string[] = [];
  if (listed.code !== 0) {
    log("could not list this runner's containers", { level: "warn", error: engineError(listed) });
  } else {
    // Service containers first: they live in their build container's network namespace.
    const lines = listed.stdout
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((line) => line.trim().split(/\s+/))
      .sort((a, b) => Number(!a[2]) - Number(!b[2]));
    for (const [id, job = ""] of lines) {
      if (!id || job === keep) continue;
      const rm = await engineCall(engine, ["rm", "--force", "--volumes", ...(engine.name === "podman" ? ["--time", "0"] : []), id], { timeoutMs: 120_000 });
      if (rm.code === 0) removed.includes(job) || removed.push(job);
      else log("could not remove a leftover build container", { level: "warn", container: id, job_id: job, error: engineError(rm) });
    }
  }
  for (const dir of ["jobs", "homes", "overlays"]) {
    const root = join(workDir, dir);
    if (!existsSync(root)) continue;
    for (const job of readdirSync(root)) {
      if (job === keep) continue;
      rmSync(join(root, job), { recursive: true, force: true });
      if (!removed.includes(job)) removed.push(job);
    }
  }
  if (removed.length) log("removed what jobs this runner no longer runs had left", { job_ids: removed });
  return removed;
}
