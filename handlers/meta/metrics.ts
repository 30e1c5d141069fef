// GET /metrics: Prometheus text format. Counters of this process (requests, log bytes, SSE
// subscribers) plus figures read from the database at scrape time, so every daemon process
// sharing one database reports the same builds by status and queue depth. Builds are read from
// their counters (build_counts, kept by triggers in each build change's transaction, schema.sql
// migration 17): a few rows per pipeline, whatever the number of builds.
import { defineEndpoint } from "../../lib/http/route.ts";
import { MetricsRegistry } from "../../lib/daemon/metrics.ts";
import { buildCountsByStatus } from "../../lib/builds/store.ts";
import { connectedRunnerCount } from "../../lib/runners/store.ts";

export const endpoint = defineEndpoint({
  operationId: "metrics",
  summary: "Prometheus metrics",
  description: "Protected by ROOST_METRICS_TOKEN (bearer) when set; otherwise loopback peers only.",
  produces: ["text/plain; version=0.0.4"],
  async handle(_input, ctx) {
    const builds = MetricsRegistry.snapshot("roost_builds", "Builds by status (from the database).", "gauge");
    for (const status of ["queued", "running", "succeeded", "failed", "canceled"]) builds.set({ status }, 0);
    let queued = 0;
    for (const [status, n] of await buildCountsByStatus(ctx.db)) {
      builds.set({ status }, n);
      if (status === "queued") queued = n;
    }
    const queue = MetricsRegistry.snapshot("roost_queue_depth", "Builds waiting for a runner.", "gauge");
    queue.set({}, queued);
    const extra = [builds, queue];
    const runners = await connectedRunnerCount(ctx.db, ctx.clock.now());
    if (runners !== null) {
      const gauge = MetricsRegistry.snapshot("roost_runners_connected", "Runners seen in the last minute.", "gauge");
      gauge.set({}, runners);
      extra.push(gauge);
    }
    return new Response(ctx.metrics.render(extra), { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } });
  },
});
