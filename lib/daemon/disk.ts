// A full data directory (docs/operations.md "Full disk"). A write that fails because the disk or
// the user's quota is full answers 507 insufficient_storage (RFC 4918 §11.5: "unable to store
// the representation needed to complete the request"), not 500, and GET /readyz answers 503 while
// the data directory's file system is (nearly) full or a write failed that way moments ago, so a
// load balancer stops sending work the daemon cannot save.
import { statfs } from "node:fs/promises";
import { ApiError } from "../http/errors.ts";
import type { MetricsRegistry } from "./metrics.ts";

/** SQLite's SQLITE_FULL, and the errno names of a full file system (ENOSPC) or quota (EDQUOT). */
const FULL_CODES = new Set(["SQLITE_FULL", "ENOSPC", "EDQUOT"]);
const FULL_MESSAGES = /database or disk is full|no space left on device|disk quota exceeded/i;

/** Below this much free space the data directory counts as full; small file systems use 5 % of their size instead. */
export const MIN_FREE_BYTES = 64 * 1024 * 1024;
/** How long after a write failed for want of space /readyz keeps answering 503 (a quota is invisible to statfs). */
export const RECENT_FULL_SECONDS = 10;

export const DISK_FULL_MESSAGE =
  "The disk of Roost's data directory is full, so this change could not be saved; the operator must free space there (docs/operations.md, Full disk).";

/** Whether `error` (or any error in its `cause` chain) is a file system or database that ran out of space. */
export function isDiskFullError(error: unknown): boolean {
  for (
    let e = error as { code?: unknown; extendedCode?: unknown; message?: unknown; cause?: unknown } | null | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (typeof e !== "object") return false;
    if (FULL_CODES.has(String(e.code)) || FULL_CODES.has(String(e.extendedCode))) return true;
    if (typeof e.message === "string" && FULL_MESSAGES.test(e.message)) return true;
  }
  return false;
}

export function diskFullError(): ApiError {
  return new ApiError("insufficient_storage", DISK_FULL_MESSAGE);
}

function fullAtGauge(metrics: MetricsRegistry) {
  return metrics.gauge("roost_disk_full_at_seconds", "When a write last failed because the data directory's disk was full (Unix seconds; 0 = never).");
}

/** Notes a write refused for want of space: counted for /metrics and remembered for /readyz. */
export function recordDiskFull(metrics: MetricsRegistry, now: number): void {
  metrics.counter("roost_disk_full_errors_total", "Writes refused because the data directory's disk was full.").inc();
  fullAtGauge(metrics).set({}, now);
}

/** Why the data directory cannot take writes now, or null when it can. */
export async function diskFullReason(dataDir: string, metrics: MetricsRegistry, now: number): Promise<string | null> {
  const fs = await statfs(dataDir).catch(() => null);
  if (fs) {
    const threshold = Math.floor(Math.min(MIN_FREE_BYTES, (fs.blocks * fs.bsize) / 20));
    if (fs.bavail * fs.bsize < threshold) return `The data directory's disk is full: fewer than ${threshold} bytes are free.`;
  }
  const lastFull = fullAtGauge(metrics).values.get("") ?? 0;
  if (lastFull > 0 && now - lastFull < RECENT_FULL_SECONDS)
    return `A write failed less than ${RECENT_FULL_SECONDS} seconds ago because the data directory's disk or quota was full.`;
  return null;
}
