// GET /metrics: Prometheus text format. Counters of this process (requests, log bytes, SSE
// subscribers) plus figures read from the database at scrape time, so every daemon process
// sharing one database reports the same builds by status and queue depth. Builds are read from
// their counters (build_counts, kept by triggers in each build change's transaction, schema.sql
// migration 17): a few rows per pipeline, whatever the number of builds.
import { defineEndpoint } from "../../lib/http/route.ts";
import { MetricsRegistry } from "../../lib/daemon/metrics.ts";
import { all } from "../../lib/db/client.ts";

export const endpoint = defineEndpoint({
  operationId: "metrics",
  summary: "Prometheus metrics",
  description: "Protected by ROOST_METRICS_TOKEN (bearer) when set; otherwise loopback peers only.",
  tag: "meta",
  produces: ["text/plain; version=0.0.4"],
  errors: [],
  async handle(_input, ctx) {
    const builds = MetricsRegistry.snapshot("roost_builds", "Builds by status (from the database).", "gauge");
    for (const status of ["queued", "running", "succeeded", "failed", "canceled"]) builds.set({ status }, 0);
    let queued = 0;
    for (const row of await all(ctx.db, "SELECT status, SUM(n) AS n FROM build_counts GROUP BY status")) {
      builds.set({ status: String(row.status) }, Number(row.n));
      if (row.status === "queued") queued = Number(row.n);
    }
    const queue = MetricsRegistry.snapshot("roost_queue_depth", "Builds waiting for a runner.", "gauge");
    queue.set({}, queued);
    const extra = [builds, queue];
    const runners = await connectedRunners(ctx.db);
    if (runners !== null) {
      const gauge = MetricsRegistry.snapshot("roost_runners_connected", "Runners seen in the last minute.", "gauge");
      gauge.set({}, runners);
      extra.push(gauge);
    }
    return new Response(ctx.metrics.render(extra), { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } });
  },
});

/** Runners that contacted the daemon in the last minute; null until the runners table exists. */
async function connectedRunners(db: Parameters<typeof all>[0]): Promise<number | null> {
  const table = await all(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runners'");
  if (table.length === 0) return null;
  const columns = await all(db, "SELECT name FROM pragma_table_info('runners') WHERE name = 'last_seen_at'");
  if (columns.length === 0) return null;
  const rows = await all(db, "SELECT COUNT(*) AS n FROM runners WHERE last_seen_at > unixepoch() - 60");
  return Number(rows[0]?.n ?? 0);
}
