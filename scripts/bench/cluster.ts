// Three daemons on one libSQL server against one daemon on its local file, under the same load
// of 100 runners (docs/operations.md "Several hosts"). Each runner, in a loop until the time is
// up: claims a build, streams its log in APPENDS requests of LINES_PER_APPEND lines, heartbeats
// and finishes it. On the cluster a runner talks to one daemon (runner i to daemon i mod 3, as a
// load balancer spreads connections); the daemons reach sqld over loopback by WebSocket
// (`libsql://…?tls=0`). Figures: builds finished (the cluster's as a ratio of the file's) and the
// append latency p50/p99 each side. The builds are queued before the clock starts.
// `npm run bench -- cluster` records the rows (scripts/bench.ts); `bun run scripts/bench/cluster.ts` prints them.
import { http, startDaemon, type Daemon } from "../../tests/helpers/daemon.ts";
import { startSqld, type Sqld } from "../../tests/support/sqld.ts";
import { ciFixture, LINE, owner } from "../bench.ts";
import { connectRunners, queueBuilds } from "./fleet.ts";
import { printRows, type BenchRow } from "./row.ts";

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 10_000);
const RUNNERS = 100;
const APPENDS = 4;
const LINES_PER_APPEND = 25;
/** Builds queued before the clock starts: more than the runners can finish in DURATION_MS here. */
const QUEUED = Number(process.env.BENCH_CLUSTER_BUILDS ?? 1500);
const SECRET = "bench-webhook-secret-0123";
/** Daemons on sqld (BENCH_CLUSTER_DAEMONS=1 measures one daemon on sqld under the same load). */
const DAEMONS = Number(process.env.BENCH_CLUSTER_DAEMONS ?? 3);

export interface ClusterFigures {
  builds: number;
  seconds: number;
  p50: number;
  p99: number;
  /** p50 of the claim and of the finish, ms. */
  claimP50: number;
  finishP50: number;
  errors: number;
  /** Whether the runners ran out of queued builds before the time was up. */
  drained: boolean;
}

type Setup = "one daemon on its local file" | "three daemons on one sqld (WebSocket)";

async function run(setup: Setup): Promise<ClusterFigures> {
  const sqld: Sqld | undefined = setup === "one daemon on its local file" ? undefined : await startSqld();
  const daemons: Daemon[] = [];
  let stopFixture = async () => {};
  try {
    const env: Record<string, string> = {
      ROOST_LOG_LEVEL: "warn",
      ROOST_SECRET_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64"),
    };
    if (sqld) env.ROOST_DATABASE_URL = `libsql://127.0.0.1:${new URL(sqld.url).port}?tls=0`;
    // The first daemon migrates the database; the others start on it.
    daemons.push(await startDaemon({ env }));
    if (sqld) daemons.push(...(await Promise.all(Array.from({ length: DAEMONS - 1 }, () => startDaemon({ env })))));
    const first = daemons[0]!;
    const token = await owner(first);
    const ci = await ciFixture(first, token, SECRET);
    stopFixture = ci.stop;
    await http(first.url, "PATCH", `/v1/pipelines/${ci.pipelineId}`, { token, body: { concurrency: { max_concurrent: 1000 } } });
    const urls = daemons.map((d) => d.url);
    await queueBuilds(urls, token, ci, QUEUED);
    const runners = await connectRunners(urls, token, RUNNERS);

    let builds = 0;
    let errors = 0;
    let drained = false;
    const latencies: number[] = [];
    const claims: number[] = [];
    const finishes: number[] = [];
    const began = performance.now();
    const deadline = began + DURATION_MS;
    await Promise.all(
      runners.map(async (runner) => {
        const call = (path: string, body: unknown) => http(runner.url, "POST", `/v1/runners/${runner.id}${path}`, { token: runner.token, body });
        while (performance.now() < deadline) {
          const claimSent = performance.now();
          const claim = await call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 });
          claims.push(performance.now() - claimSent);
          if (claim.status === 204) {
            drained = true;
            return;
          }
          if (claim.status !== 201) {
            errors++;
            continue;
          }
          const jobId = claim.body.job.job_id as string;
          let next = 0;
          for (let a = 0; a < APPENDS; a++) {
            const sent = performance.now();
            const res = await call(`/jobs/${jobId}/logs`, {
              first_line: next,
              lines: Array.from({ length: LINES_PER_APPEND }, (_, n) => ({ step: "build", text: `${LINE} ${next + n}` })),
            });
            latencies.push(performance.now() - sent);
            if (res.status !== 202) errors++;
            else next = res.body.next_line as number;
          }
          if ((await call("/heartbeat", { job_ids: [jobId] })).status !== 200) errors++;
          const finishSent = performance.now();
          const finished = await call(`/jobs/${jobId}/finish`, { status: "succeeded", exit_code: 0, line_count: next });
          finishes.push(performance.now() - finishSent);
          if (finished.status === 200) builds++;
          else errors++;
        }
      }),
    );
    const seconds = (performance.now() - began) / 1000;
    const at = (list: number[], q: number) => list.sort((x, y) => x - y)[Math.min(list.length - 1, Math.floor(q * list.length))] ?? 0;
    return { builds, seconds, p50: at(latencies, 0.5), p99: at(latencies, 0.99), claimP50: at(claims, 0.5), finishP50: at(finishes, 0.5), errors, drained };
  } finally {
    await stopFixture();
    await Promise.all(daemons.map((d) => d.stop()));
    await sqld?.stop();
  }
}

/** The rows `npm run bench -- cluster` records, and the ratio of builds finished. */
export async function clusterRows(notes: string[]): Promise<{ rows: BenchRow[]; ratios: Record<string, number> }> {
  const file = await run("one daemon on its local file");
  const cluster = await run("three daemons on one sqld (WebSocket)");
  const scenario = `${RUNNERS} runners (claim, ${APPENDS} appends of ${LINES_PER_APPEND} lines, heartbeat, finish), ${DAEMONS} daemon(s) on one sqld over loopback`;
  const baselineName = "one daemon on its local file";
  const rows: BenchRow[] = [
    {
      scenario,
      metric: "builds finished/s",
      roost: cluster.builds / cluster.seconds,
      baseline: file.builds / file.seconds,
      baselineName,
      higherIsBetter: true,
      unit: "/s",
    },
    { scenario, metric: "log append p50", roost: cluster.p50, baseline: file.p50, baselineName, higherIsBetter: false, unit: "ms" },
    { scenario, metric: "log append p99", roost: cluster.p99, baseline: file.p99, baselineName, higherIsBetter: false, unit: "ms" },
    { scenario, metric: "claim p50", roost: cluster.claimP50, baseline: file.claimP50, baselineName, higherIsBetter: false, unit: "ms" },
    { scenario, metric: "finish p50", roost: cluster.finishP50, baseline: file.finishP50, baselineName, higherIsBetter: false, unit: "ms" },
  ];
  for (const [name, f] of [
    ["three daemons on sqld", cluster],
    ["one daemon on its file", file],
  ] as const) {
    if (f.errors) notes.push(`cluster bench, ${name}: ${f.errors} runner requests failed.`);
    if (f.drained) notes.push(`cluster bench, ${name}: the runners finished all ${QUEUED} queued builds before the time was up; raise BENCH_CLUSTER_BUILDS.`);
  }
  return { rows, ratios: { "cluster builds ratio": cluster.builds / cluster.seconds / (file.builds / file.seconds), "cluster append p99 ms": cluster.p99 } };
}

if (import.meta.main) {
  const notes: string[] = [];
  const { rows, ratios } = await clusterRows(notes);
  printRows(rows, ratios, notes);
}
