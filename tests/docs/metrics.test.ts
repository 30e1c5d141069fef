// Every metric the docs list is on GET /metrics of a fresh daemon, at zero, before anything has
// happened (docs/operations.md "Health and metrics", docs/runners.md): a dashboard or an alert
// written from the docs finds its series from the first scrape.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, startDaemon, type Daemon } from "../helpers/daemon.ts";

let daemon: Daemon;
beforeAll(async () => (daemon = await startDaemon()));
afterAll(async () => void (await daemon.stop()));

/** Metric names in backticks in the docs: roost_… families, not credential prefixes (roost_sess_…). */
function documentedMetrics(): string[] {
  const names = new Set<string>();
  for (const doc of ["docs/operations.md", "docs/runners.md", "README.md"]) {
    for (const [, name] of readFileSync(join(REPO_ROOT, doc), "utf8").matchAll(/`(roost_[a-z_]+[a-z])(?:\{[^}`]*\})?`/g)) names.add(name!);
  }
  return [...names].sort();
}

test("the docs list the metrics this test checks", () => {
  expect(documentedMetrics()).toEqual(
    expect.arrayContaining([
      "roost_builds",
      "roost_disk_full_at_seconds",
      "roost_disk_full_errors_total",
      "roost_http_requests_total",
      "roost_log_bytes_ingested_total",
      "roost_queue_depth",
      "roost_runners_connected",
      "roost_sse_catchup_reads_total",
      "roost_sse_subscribers",
    ]),
  );
});

test("a fresh daemon's /metrics has a sample of every documented metric", async () => {
  const text = await (await fetch(`${daemon.url}/metrics`)).text();
  const missing = documentedMetrics().filter((name) => !new RegExp(`^${name}(\\{[^}]*\\})? \\d`, "m").test(text));
  expect(missing).toEqual([]);
  for (const name of [
    "roost_disk_full_errors_total",
    "roost_log_bytes_ingested_total",
    "roost_sse_catchup_reads_total",
    "roost_sse_subscribers",
    "roost_queue_depth",
  ]) {
    expect(text).toContain(`\n${name} 0\n`);
  }
});
