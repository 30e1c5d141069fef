// A build container's limits (docs/runners.md "Limits"): CPUs, memory, processes and the
// workspace's disk. The runner's values (--cpus, --memory, --pids, --disk) are its builds'
// defaults and their ceiling; a pipeline's `limits` may ask for less, and what it asks above the
// runner's is lowered to the runner's, with a line in the build log saying so.
import { readFileSync } from "node:fs";

export interface Limits {
  cpus: number | null;
  memory_mb: number | null;
  pids: number | null;
  disk_mb: number | null;
}

export const NO_LIMITS: Limits = { cpus: null, memory_mb: null, pids: null, disk_mb: null };

/** Processes per build when neither the runner nor the pipeline says (Podman's default is 2048; a Gradle build forks more). */
export const DEFAULT_PIDS = 4096;

/**
 * A size as an operator writes it: 512 (MiB), 512m, 512M, 4g, 4G, 4GiB, 512MiB. MiB, or null
 * when it is not one.
 */
export function parseMebibytes(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(m|mb|mib|g|gb|gib)?\s*$/i.exec(text);
  if (!m) return null;
  const n = Number(m[1]) * (m[2] && m[2].toLowerCase().startsWith("g") ? 1024 : 1);
  return Number.isFinite(n) && n >= 1 ? Math.round(n) : null;
}

/** "512 MiB", "4 GiB", "1.5 GiB". */
export function formatMebibytes(mb: number): string {
  return mb >= 1024 ? `${Number((mb / 1024).toFixed(1))} GiB` : `${mb} MiB`;
}

/** What a build gets: the pipeline's ask within the runner's ceiling; notes say what was lowered. */
export function resolveLimits(runner: Limits, pipeline: Partial<Limits> | undefined): { limits: Limits; notes: string[] } {
  const notes: string[] = [];
  const pick = <K extends keyof Limits>(key: K, show: (v: number) => string): number | null => {
    const ceiling = runner[key];
    const asked = pipeline?.[key] ?? null;
    if (asked === null) return ceiling;
    if (ceiling !== null && asked > ceiling) {
      notes.push(`the pipeline's ${key} ${show(asked)} is above this runner's ${show(ceiling)}: ${show(ceiling)}`);
      return ceiling;
    }
    return asked;
  };
  const limits: Limits = {
    cpus: pick("cpus", String),
    memory_mb: pick("memory_mb", formatMebibytes),
    pids: pick("pids", String),
    disk_mb: pick("disk_mb", formatMebibytes),
  };
  return { limits, notes };
}

/** One line for the build log: "cpus 2, memory 4 GiB, pids 4096, disk 20 GiB" (unlimited ones say so). */
export function describeLimits(l: Limits): string {
  return [
    `cpus ${l.cpus ?? "unlimited"}`,
    `memory ${l.memory_mb === null ? "unlimited" : formatMebibytes(l.memory_mb)}`,
    `pids ${l.pids ?? "unlimited"}`,
    `disk ${l.disk_mb === null ? "unlimited" : formatMebibytes(l.disk_mb)}`,
  ].join(", ");
}

/**
 * The runner's own soft limit of a resource (/proc/self/limits), or null when unlimited or not
 * Linux. A container's nofile and nproc ulimits are set at or below these: the engine's defaults
 * (1048576) are above them on hosts that do not let a process raise its limits (no
 * CAP_SYS_RESOURCE), and the container would not start there.
 */
export function ownSoftLimit(name: "Max open files" | "Max processes"): number | null {
  try {
    const text = readFileSync("/proc/self/limits", "utf8");
    const line = text.split("\n").find((l) => l.startsWith(name));
    const soft = line?.slice(name.length).trim().split(/\s+/)[0];
    return soft && /^\d+$/.test(soft) ? Number(soft) : null;
  } catch {
    return null;
  }
}
