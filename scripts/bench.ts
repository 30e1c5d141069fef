// `npm run bench`: Roost's performance figures, each beside a baseline measured in the same run
// and printed as a ratio (absolute numbers drift between machines and runs; ratios travel).
// HTTP load comes from wrk (scripts/bench/wrk.ts). Writes docs/benchmarks.md with the machine it
// ran on and the targets table. Takes a few minutes; bounded.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem, tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { BUN, http, startDaemon, type Daemon } from "../tests/helpers/daemon.ts";
import { githubProject, pushDeliveries } from "./bench/github.ts";
import type { BenchRow } from "./bench/row.ts";
import { runWrk, type RequestSpec, type WrkResult } from "./bench/wrk.ts";
import { buildBinary } from "./build.ts";

const ROOT = resolve(import.meta.dir, "..");
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 5000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const WEBHOOK_CONNECTIONS = 64;
const WRK_THREADS = 2;
/**
 * Before each measured wrk run, one of this long against the same server, not counted: a daemon
 * serves for days, and the first seconds of a fresh process measure its JIT compiling the path
 * (a sixth of a webhook daemon's CPU in the first 5 s, a twenty-fifth by the fifth run:
 * docs/benchmarks.md, "Webhook pushes: a push's CPU by statement, index and thread"). The bare
 * server is warmed the same way.
 */
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 2000);
const STALL_PROBE = join(ROOT, "scripts/bench/stall-probe.ts");
/** BENCH_CPU_PROF=<dir> runs each daemon under `bun --cpu-prof` (summarise with scripts/bench/profile-top.ts). */
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : undefined;

/** A daemon's environment for the bench: quiet logs, and `extra` Bun options (plus the CPU profiler when asked). */
function daemonEnv(name: string, bunOptions: string[] = [], env: Record<string, string> = {}): Record<string, string> {
  const options = [...bunOptions, ...(CPU_PROF_DIR ? ["--cpu-prof", `--cpu-prof-dir=${CPU_PROF_DIR}`, `--cpu-prof-name=${name}.cpuprofile`] : [])];
  return { ROOST_LOG_LEVEL: "warn", ...(options.length ? { BUN_OPTIONS: options.join(" ") } : {}), ...env };
}

const rows: BenchRow[] = [];
const notes: string[] = [];
/** Measured figures the targets table reads, by name. */
const measured = new Map<string, number>();

function record(row: BenchRow): void {
  rows.push(row);
  const ratio = row.roost / row.baseline;
  console.log(
    `${row.scenario} · ${row.metric}: roost ${fmt(row.roost)} ${row.unit} vs ${row.baselineName} ${fmt(row.baseline)} ${row.unit} (×${ratio.toFixed(3)})`,
  );
}

function fmt(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(2);
}

/** A bare Bun.serve answering `body`; returns its url, pid and a stop function. */
export async function bareServer(body: string, env: Record<string, string> = {}): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "roost-bare-"));
  writeFileSync(join(dir, "body.json"), body);
  const child = Bun.spawn([BUN, join(ROOT, "scripts/bench/bare-server.ts"), join(dir, "body.json")], {
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = (child.stdout as ReadableStream<Uint8Array>).getReader();
  const { value } = await reader.read();
  const { url } = JSON.parse(new TextDecoder().decode(value).trim().split("\n")[0]!) as { url: string };
  return {
    url,
    pid: child.pid,
    async stop() {
      child.kill();
      await child.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface Comparison {
  ours: WrkResult;
  base: WrkResult;
  /** Builds that `countBuilds` saw appear during Roost's run. */
  builds: number;
}

/**
 * Throughput and latency of Roost answering `requests` under wrk, beside a bare Bun.serve
 * answering the same bytes Roost answered to `probe` (by default the first request), loaded by
 * the same wrk script. `distinct` requests are each sent at most once to Roost.
 */
export async function compareWithBare(
  scenario: string,
  daemon: Daemon,
  spec: {
    requests: RequestSpec[];
    /** For `distinct` requests (each sent once), others of the same kind for the warm-up run. */
    warmup?: RequestSpec[];
    probe?: RequestSpec;
    distinct?: boolean;
    connections?: number;
    countBuilds?: () => Promise<number>;
  },
): Promise<Comparison> {
  const p = spec.probe ?? spec.requests[0]!;
  const probe = await fetch(daemon.url + p.path, { method: p.method, headers: p.headers, body: p.body });
  const body = await probe.text();
  if (probe.status >= 300) throw new Error(`${scenario}: the probe request answered ${probe.status}: ${body}`);
  const bare = await bareServer(body);
  const connections = spec.connections ?? CONNECTIONS;
  const wrk = (origin: string, mode: "cycle" | "once", requests = spec.requests, durationMs = DURATION_MS) =>
    runWrk({ origin, requests, mode, connections, threads: WRK_THREADS, durationMs });
  try {
    if (WARMUP_MS > 0) {
      if (spec.distinct && !spec.warmup) throw new Error(`${scenario}: distinct requests need their own warm-up requests`);
      await wrk(bare.url, "cycle", spec.requests, WARMUP_MS);
      await wrk(daemon.url, spec.distinct ? "once" : "cycle", spec.warmup ?? spec.requests, WARMUP_MS);
    }
    const bareCpu = cpuMsOf(bare.pid);
    const base = await wrk(bare.url, "cycle");
    const bareCpuPerRequest = (cpuMsOf(bare.pid) - bareCpu) / base.requests;
    const before = (await spec.countBuilds?.()) ?? 0;
    const from = Date.now();
    const oursCpu = cpuMsOf(daemon.process.pid);
    const ours = await wrk(daemon.url, spec.distinct ? "once" : "cycle");
    const oursCpuPerRequest = (cpuMsOf(daemon.process.pid) - oursCpu) / ours.requests;
    if (CPU_PROF_DIR) console.log(`profile window of ${scenario}: ${from}-${Date.now()}`);
    const builds = ((await spec.countBuilds?.()) ?? 0) - before;
    if (ours.errors > 0)
      notes.push(
        `${scenario}: ${ours.errors} of ${ours.requests} Roost requests failed (${ours.statusErrors} answered 4xx/5xx; the rest socket errors or timeouts).`,
      );
    if (ours.exhaustedThreads > 0)
      notes.push(
        `${scenario}: wrk sent all ${spec.requests.length} distinct requests in ${ours.seconds.toFixed(2)} s, before the ${DURATION_MS / 1000} s were up; the rate is over the time it sent.`,
      );
    const load = `wrk, ${connections} connections`;
    record({
      scenario,
      metric: `requests/s (${load})`,
      roost: ours.rps,
      baseline: base.rps,
      baselineName: "bare Bun.serve",
      higherIsBetter: true,
      unit: "req/s",
    });
    record({ scenario, metric: "p50 latency", roost: ours.p50_ms, baseline: base.p50_ms, baselineName: "bare Bun.serve", higherIsBetter: false, unit: "ms" });
    record({ scenario, metric: "p99 latency", roost: ours.p99_ms, baseline: base.p99_ms, baselineName: "bare Bun.serve", higherIsBetter: false, unit: "ms" });
    // The server's own CPU time per answer: what the other processes on a shared machine change least.
    record({
      scenario,
      metric: "server CPU time per request",
      roost: oursCpuPerRequest * 1000,
      baseline: bareCpuPerRequest * 1000,
      baselineName: "bare Bun.serve",
      higherIsBetter: false,
      unit: "µs",
    });
    return { ours, base, builds };
  } finally {
    await bare.stop();
  }
}

export async function owner(daemon: Daemon): Promise<string> {
  const login = await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "bench@example.test" } });
  const token = await http(daemon.url, "POST", "/v1/api-tokens", { token: login.body.session_token, body: { name: "bench", role: "owner" } });
  return token.body.token as string;
}

/** GET /healthz: what the listener and the app's request path cost with no handler work. */
async function healthzScenario(): Promise<void> {
  const daemon = await startDaemon({ env: daemonEnv("healthz") });
  try {
    const { ours, base } = await compareWithBare("GET /healthz (no authentication, no database)", daemon, { requests: [{ path: "/healthz" }] });
    measured.set("healthz ratio", ours.rps / base.rps);
  } finally {
    await daemon.stop();
  }
}

async function apiTokensScenario(): Promise<void> {
  const daemon = await startDaemon({ env: daemonEnv("api-tokens") });
  try {
    const token = await owner(daemon);
    for (let i = 0; i < 20; i++) await http(daemon.url, "POST", "/v1/api-tokens", { token, body: { name: `listed-${i}`, role: "developer" } });
    const { ours, base } = await compareWithBare("GET /v1/api-tokens (API token auth)", daemon, {
      requests: [{ path: "/v1/api-tokens", headers: { authorization: `Bearer ${token}` } }],
    });
    measured.set("api-tokens ratio", ours.rps / base.rps);
  } finally {
    await daemon.stop();
  }
}

/** A daemon with a GitHub integration (against the host API stand-in), a project and a pipeline. */
export async function ciFixture(
  daemon: Daemon,
  token: string,
  webhookSecret: string,
): Promise<{ projectId: string; pipelineId: string; stop(): Promise<void> }> {
  const { startHostApiStandIn } = await import("../tests/support/host-api-stand-in.ts");
  const host = await startHostApiStandIn();
  host.github.repos.push({ id: 4242, full_name: "acme/app", default_branch: "main", private: true });
  const projectId = await githubProject(daemon, token, host, webhookSecret);
  const pipeline = (
    await http(daemon.url, "POST", `/v1/projects/${projectId}/pipelines`, {
      token,
      body: { name: "bench", trigger_config: { branches: ["**"] }, concurrency: { max_concurrent: 50 } },
    })
  ).body.pipeline;
  return { projectId, pipelineId: pipeline.id, stop: () => host.stop() };
}

/** Builds of a project in the database, read through the API (include=total). */
export function buildCounter(daemon: Daemon, token: string, projectId: string, query = ""): () => Promise<number> {
  return async () => (await http(daemon.url, "GET", `/v1/projects/${projectId}/builds?limit=1&include=total${query}`, { token })).body.total as number;
}

async function buildsScenario(): Promise<void> {
  const daemon = await startDaemon({ env: daemonEnv("builds") });
  try {
    const token = await owner(daemon);
    const ci = await ciFixture(daemon, token, "bench-webhook-secret-0123");
    const scenario = "POST /v1/projects/{id}/builds (creates a build)";
    const { ours, builds } = await compareWithBare(scenario, daemon, {
      requests: [buildRequest(ci, token)],
      countBuilds: buildCounter(daemon, token, ci.projectId),
    });
    recordBuilds(scenario, "POST builds", builds, ours);
    await ci.stop();
  } finally {
    await daemon.stop();
  }
}

function buildRequest(ci: { projectId: string; pipelineId: string }, token: string): RequestSpec {
  return {
    method: "POST",
    path: `/v1/projects/${ci.projectId}/builds`,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ pipeline_id: ci.pipelineId, commit_sha: "c".repeat(40) }),
  };
}

/** Builds in the database after the run, per second of the run, beside the 2xx answers per second. */
function recordBuilds(scenario: string, key: string, builds: number, ours: WrkResult): void {
  const ok = ours.requests - ours.statusErrors;
  record({
    scenario,
    metric: "builds committed/s (counted in the database after the run)",
    roost: builds / ours.seconds,
    baseline: ok / ours.seconds,
    baselineName: "Roost's 2xx answers/s",
    higherIsBetter: true,
    unit: "/s",
  });
  measured.set(`${key} builds/s`, builds / ours.seconds);
}

/** Verified GitHub push deliveries end to end: signature, dedupe, trigger match, build row. */
async function webhooksScenario(): Promise<void> {
  const secret = "bench-webhook-secret-0123";
  const daemon = await startDaemon({ env: daemonEnv("webhooks") });
  try {
    const token = await owner(daemon);
    const ci = await ciFixture(daemon, token, secret);
    // Ten times the target rate for the whole run: wrk sends each at most once and stops if they
    // run out, so no delivery repeats (a repeat would measure the dedupe answer instead).
    const [probe, ...requests] = pushDeliveries(secret, 1 + Math.ceil((DURATION_MS / 1000) * 18_000), "a");
    const warmup = pushDeliveries(secret, Math.ceil((WARMUP_MS / 1000) * 18_000), "warm");
    const scenario = `POST /v1/webhooks/github (verified push → build, distinct deliveries)`;
    const { ours, builds } = await compareWithBare(scenario, daemon, {
      requests,
      warmup,
      probe,
      distinct: true,
      connections: WEBHOOK_CONNECTIONS,
      countBuilds: buildCounter(daemon, token, ci.projectId, "&trigger_type=webhook"),
    });
    recordBuilds(scenario, "webhook", builds, ours);
    await ci.stop();
  } finally {
    await daemon.stop();
  }
}

interface Stall {
  max_ms: number;
  /** The longest single synchronous SQLite call, and its statement. */
  sql_max_ms: number;
  sql: string;
}

/** Asks a process running scripts/bench/stall-probe.ts for its longest stall since the last ask. */
async function askStall(pid: number, file: string): Promise<Stall> {
  const seq = () => {
    try {
      return JSON.parse(readFileSync(file, "utf8")) as Stall & { seq: number };
    } catch {
      return { seq: 0, max_ms: 0, sql_max_ms: 0, sql: "" };
    }
  };
  const before = seq().seq;
  process.kill(pid, "SIGUSR2");
  for (let i = 0; i < 500; i++) {
    const now = seq();
    if (now.seq > before) return now;
    await Bun.sleep(10);
  }
  throw new Error(`process ${pid} did not report its event-loop stall`);
}

/**
 * Two daemons on one database file, each loaded by its own wrk (one thread, half the
 * connections) creating builds: the longest event-loop stall either process saw during the run,
 * measured inside each by scripts/bench/stall-probe.ts. Baseline: two bare Bun.serve processes
 * with the same probe under the same two wrk runs.
 */
async function twoProcessesScenario(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "roost-bench-two-"));
  const dataDir = join(dir, "data");
  const probeEnv = (name: string) => ({ BUN_OPTIONS: `--preload ${STALL_PROBE}`, ROOST_BENCH_STALL_FILE: join(dir, `${name}.stall.json`) });
  const [a, b] = await Promise.all(
    ["a", "b"].map((name) =>
      startDaemon({
        dataDir,
        cleanup: false,
        env: daemonEnv(`two-processes-${name}`, [`--preload ${STALL_PROBE}`], { ROOST_BENCH_STALL_FILE: probeEnv(name).ROOST_BENCH_STALL_FILE }),
      }),
    ),
  );
  try {
    const token = await owner(a!);
    const ci = await ciFixture(a!, token, "bench-webhook-secret-0123");
    const request = buildRequest(ci, token);
    const probe = await fetch(b!.url + request.path, { method: request.method, headers: request.headers, body: request.body });
    const body = await probe.text();
    if (probe.status !== 201) throw new Error(`two processes: creating a build through the second process answered ${probe.status}: ${body}`);
    const load = (origin: string) => runWrk({ origin, requests: [request], mode: "cycle", connections: CONNECTIONS / 2, threads: 1, durationMs: DURATION_MS });
    const bareEnv = ["bare-a", "bare-b"].map(probeEnv);
    const bares = await Promise.all(bareEnv.map((env) => bareServer(body, env)));
    let baseStall = 0;
    try {
      await Promise.all(bares.map((s, i) => askStall(s.pid, bareEnv[i]!.ROOST_BENCH_STALL_FILE)));
      await Promise.all(bares.map((s) => load(s.url)));
      baseStall = Math.max(...(await Promise.all(bares.map((s, i) => askStall(s.pid, bareEnv[i]!.ROOST_BENCH_STALL_FILE)))).map((s) => s.max_ms));
    } finally {
      await Promise.all(bares.map((s) => s.stop()));
    }
    const daemons = [a!, b!];
    const files = ["a", "b"].map((name) => probeEnv(name).ROOST_BENCH_STALL_FILE);
    const scenario = "two processes, one database file (wrk creating builds through both, 16 connections each)";
    const count = buildCounter(a!, token, ci.projectId);
    const before = await count();
    await Promise.all(daemons.map((d, i) => askStall(d.process.pid, files[i]!)));
    const from = Date.now();
    const results = await Promise.all(daemons.map((d) => load(d.url)));
    if (CPU_PROF_DIR) console.log(`profile window of ${scenario}: ${from}-${Date.now()}`);
    const stalls = await Promise.all(daemons.map((d, i) => askStall(d.process.pid, files[i]!)));
    const builds = (await count()) - before;
    const longest = Math.max(...stalls.map((s) => s.max_ms));
    record({
      scenario,
      metric: "longest event-loop stall in either process",
      roost: longest,
      baseline: baseStall,
      baselineName: "two bare Bun.serve processes under the same load",
      higherIsBetter: false,
      unit: "ms",
    });
    const seconds = Math.max(...results.map((r) => r.seconds));
    const ok = results.reduce((n, r) => n + r.requests - r.statusErrors, 0);
    record({
      scenario,
      metric: "builds committed/s, both processes together",
      roost: builds / seconds,
      baseline: ok / seconds,
      baselineName: "Roost's 2xx answers/s",
      higherIsBetter: true,
      unit: "/s",
    });
    const errors = results.reduce((n, r) => n + r.errors, 0);
    if (errors > 0)
      notes.push(`two processes: ${errors} requests failed (4xx/5xx, socket errors or timeouts) of ${results.reduce((n, r) => n + r.requests, 0)}.`);
    notes.push(
      `two processes: longest stall ${stalls.map((s) => s.max_ms.toFixed(1)).join(" ms and ")} ms in the two daemons; their longest single SQLite call (synchronous, on the event loop) ` +
        stalls.map((s) => `${s.sql_max_ms.toFixed(1)} ms (\`${s.sql.replace(/`/g, "'")}\`)`).join(" and ") +
        ".",
    );
    measured.set("two processes stall", longest);
    await ci.stop();
  } finally {
    await Promise.all([a!.stop(), b!.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A daemon with one runner that has claimed `jobs` builds, ready to append logs. */
async function runnerFixture(daemon: Daemon, token: string, jobs: number) {
  const ci = await ciFixture(daemon, token, "bench-webhook-secret-0123");
  for (let i = 0; i < jobs; i++)
    await http(daemon.url, "POST", `/v1/projects/${ci.projectId}/builds`, { token, body: { pipeline_id: ci.pipelineId, commit_sha: "c".repeat(40) } });
  const created = (await http(daemon.url, "POST", "/v1/runners", { token, body: { name: "bench" } })).body;
  const runner = { id: created.runner.id as string, token: created.token as string };
  await http(daemon.url, "POST", `/v1/runners/${runner.id}/connect`, { token: runner.token, body: { capabilities: { os: "linux", arch: "x64" } } });
  const claimed: { job_id: string; build: { id: string } }[] = [];
  for (let i = 0; i < jobs; i++)
    claimed.push(
      (await http(daemon.url, "POST", `/v1/runners/${runner.id}/jobs/claim`, { token: runner.token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } }))
        .body.job,
    );
  return { ci, runner, claimed };
}

export const LINE = "I/flutter ( 4321): Running Gradle task 'assembleRelease'... [bench line padding to ~100 bytes]";

/**
 * Log ingest's rounds. Each round runs both sides once, the order alternating (round 1 Roost first,
 * round 2 the raw inserts first, and so on): run one after the other, the second side always ran
 * while the kernel was still writing back the first side's dirty pages, and the raw inserts
 * (always second) moved 158k–295k lines/s between runs of the same code.
 */
const LOG_ROUNDS = Math.max(1, Number(process.env.BENCH_LOG_ROUNDS ?? 3));
/**
 * Each side's window in a round: each side gets twice DURATION_MS over all rounds, whatever their
 * number (3.3 s a window at the defaults, the scenario about 22 s).
 */
const LOG_SIDE_MS = (2 * DURATION_MS) / LOG_ROUNDS;

/** The middle value (the mean of the two middle ones for an even count). */
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** What one side did in one window. */
interface IngestWindow {
  lines: number;
  seconds: number;
  /** CPU time of the process that stored the lines (the daemon, or the bench process for the raw inserts), ms. */
  cpuMs: number;
}

/** Log ingest through the HTTP append path vs raw SQLite inserts of the same rows, alternated over LOG_ROUNDS rounds. */
async function logsScenario(): Promise<void> {
  // The per-build cap at its highest (1 GiB): at the default 64 MiB, a build past it has lines cut
  // from its middle, work the raw inserts never do, and the 8 builds together reach it after about
  // 5.3 million lines (some 17 s of appends at the best rate seen here).
  const daemon = await startDaemon({ env: daemonEnv("logs", [], { ROOST_MAX_BUILD_LOG_BYTES: String(1024 ** 3) }) });
  const dir = mkdtempSync(join(tmpdir(), "roost-bench-raw-"));
  try {
    const token = await owner(daemon);
    const { ci, runner, claimed } = await runnerFixture(daemon, token, 8);
    const batch = 500;
    // Each job's next line, kept across rounds: a round continues the jobs' logs where the last stopped.
    const next = claimed.map(() => 0);
    const roostWindow = async (ms: number): Promise<IngestWindow> => {
      let lines = 0;
      const deadline = performance.now() + ms;
      const began = performance.now();
      const cpuBefore = cpuMsOf(daemon.process.pid);
      await Promise.all(
        claimed.map(async (job, j) => {
          while (performance.now() < deadline) {
            const first = next[j]!;
            const res = await fetch(`${daemon.url}/v1/runners/${runner.id}/jobs/${job.job_id}/logs`, {
              method: "POST",
              headers: { authorization: `Bearer ${runner.token}`, "content-type": "application/json" },
              body: JSON.stringify({ first_line: first, lines: Array.from({ length: batch }, (_, i) => ({ step: "build", text: `${LINE} ${first + i}` })) }),
            });
            const body = (await res.json()) as { next_line: number };
            lines += body.next_line - first;
            next[j] = body.next_line;
          }
        }),
      );
      return { lines, seconds: (performance.now() - began) / 1000, cpuMs: cpuMsOf(daemon.process.pid) - cpuBefore };
    };
    // Baseline: the same rows straight into the database, 500 per transaction, through the same Db
    // (bun:sqlite), in the bench process. One database for all rounds, so its file grows as the daemon's does.
    const { openDatabase, inTransaction } = await import("../lib/db/client.ts");
    const { migrate } = await import("../lib/db/migrate.ts");
    const raw = await openDatabase(`file:${join(dir, "raw.db")}`);
    await migrate(raw, () => 1);
    // The same columns and key as build_logs, without the foreign key to builds.
    await raw.execute(
      "CREATE TABLE raw_logs (build_id TEXT NOT NULL, seq INTEGER NOT NULL, job_id TEXT NOT NULL, line INTEGER NOT NULL, step TEXT NOT NULL, stream TEXT NOT NULL, ts INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (build_id, seq))",
    );
    let rawNext = 0;
    const rawWindow = async (ms: number): Promise<IngestWindow> => {
      const first = rawNext;
      const deadline = performance.now() + ms;
      const began = performance.now();
      const cpuBefore = process.cpuUsage();
      while (performance.now() < deadline) {
        await inTransaction(raw, async (tx) => {
          for (let i = 0; i < batch; i++, rawNext++)
            await tx.execute({
              sql: "INSERT INTO raw_logs (build_id, seq, job_id, line, step, stream, ts, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
              args: ["b", rawNext + 1, "j", rawNext, "build", "stdout", 1, `${LINE} ${rawNext}`],
            });
        });
      }
      const seconds = (performance.now() - began) / 1000;
      const cpu = process.cpuUsage(cpuBefore);
      return { lines: rawNext - first, seconds, cpuMs: (cpu.user + cpu.system) / 1000 };
    };
    const roost: IngestWindow[] = [];
    const base: IngestWindow[] = [];
    const ratios: number[] = [];
    try {
      for (let round = 0; round < LOG_ROUNDS; round++) {
        if (round % 2 === 0) {
          roost.push(await roostWindow(LOG_SIDE_MS));
          base.push(await rawWindow(LOG_SIDE_MS));
        } else {
          base.push(await rawWindow(LOG_SIDE_MS));
          roost.push(await roostWindow(LOG_SIDE_MS));
        }
        const [r, b] = [roost[round]!, base[round]!];
        ratios.push(r.lines / r.seconds / (b.lines / b.seconds));
        console.log(
          `  round ${round + 1} (${round % 2 === 0 ? "roost first" : "raw first"}): roost ${fmt(r.lines / r.seconds)} lines/s, raw ${fmt(b.lines / b.seconds)} lines/s, ×${ratios[round]!.toFixed(3)}`,
        );
      }
    } finally {
      raw.close();
    }
    const total = (windows: IngestWindow[]) => ({
      lines: windows.reduce((n, w) => n + w.lines, 0),
      seconds: windows.reduce((n, w) => n + w.seconds, 0),
      cpuMs: windows.reduce((n, w) => n + w.cpuMs, 0),
    });
    const ours = total(roost);
    const theirs = total(base);
    const bytesPerLine = LINE.length + 6;
    const scenario = "log ingest (HTTP append, 8 jobs, 500-line batches)";
    record({
      scenario,
      metric: "lines/s",
      roost: ours.lines / ours.seconds,
      baseline: theirs.lines / theirs.seconds,
      baselineName: "raw SQLite inserts, 500 per transaction",
      higherIsBetter: true,
      unit: "lines/s",
    });
    measured.set("log ingest ratio", median(ratios));
    notes.push(
      `log ingest: ${LOG_ROUNDS} rounds of ${(LOG_SIDE_MS / 1000).toFixed(2)} s a side, the order alternating (round 1 Roost first); lines/s ratio by round ${ratios.map((r) => r.toFixed(3)).join(", ")}, median ${median(ratios).toFixed(3)} (the target's figure; the rows above are the totals over all rounds).`,
    );
    // The daemon's CPU time per stored line against the bench process's own for its raw inserts:
    // what the other processes on a shared machine change least.
    record({
      scenario,
      metric: "CPU time per line",
      roost: (ours.cpuMs * 1000) / ours.lines,
      baseline: (theirs.cpuMs * 1000) / theirs.lines,
      baselineName: "raw SQLite inserts",
      higherIsBetter: false,
      unit: "µs",
    });
    record({
      scenario,
      metric: "MB/s",
      roost: (ours.lines * bytesPerLine) / ours.seconds / 1e6,
      baseline: (theirs.lines * bytesPerLine) / theirs.seconds / 1e6,
      baselineName: "raw SQLite inserts",
      higherIsBetter: true,
      unit: "MB/s",
    });
    await ci.stop();
  } finally {
    await daemon.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Opens `n` SSE streams and measures append → receipt latency over `rounds` lines. */
async function sseLatency(open: () => Promise<Response>, publish: (text: string) => Promise<void>, n: number, rounds: number): Promise<number[]> {
  const responses = await Promise.all(Array.from({ length: n }, () => open()));
  const refused = responses.filter((r) => r.status !== 200);
  if (refused.length) throw new Error(`${refused.length} of ${n} streams refused: ${refused[0]!.status} ${await refused[0]!.text()}`);
  const readers = responses.map((r) => r.body!.getReader());
  const decoder = new TextDecoder();
  const latencies: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const marker = `bench-${round}-${crypto.randomUUID()}`;
    const sent = performance.now();
    const received = readers.map(async (reader) => {
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) throw new Error("stream closed");
        buffer += decoder.decode(value);
        if (buffer.includes(marker)) return performance.now() - sent;
      }
    });
    await publish(marker);
    latencies.push(...(await Promise.all(received)));
  }
  await Promise.all(readers.map((r) => r.cancel()));
  return latencies.sort((a, b) => a - b);
}

const pct = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

/** SSE delivery latency with 1, 100 and 1000 subscribers vs a bare Bun SSE fan-out; RSS with 1000 streams. */
async function sseScenario(): Promise<void> {
  const daemon = await startDaemon({ env: daemonEnv("sse") });
  const bareDir = mkdtempSync(join(tmpdir(), "roost-bare-sse-"));
  const bare = Bun.spawn([BUN, join(ROOT, "scripts/bench/bare-sse.ts")], { stdout: "pipe", stderr: "inherit" });
  try {
    const reader = (bare.stdout as ReadableStream<Uint8Array>).getReader();
    const { url: bareUrl, pid: barePid } = JSON.parse(new TextDecoder().decode((await reader.read()).value).trim()) as { url: string; pid: number };
    const token = await owner(daemon);
    const { ci, runner, claimed } = await runnerFixture(daemon, token, 1);
    const job = claimed[0]!;
    // Before any stream opens, for the RSS the streams add.
    const [idleRss, idleBareRss] = [rssOf(daemon.process.pid), rssOf(barePid)];
    let next = 0;
    const append = async (text: string) => {
      const res = await fetch(`${daemon.url}/v1/runners/${runner.id}/jobs/${job.job_id}/logs`, {
        method: "POST",
        headers: { authorization: `Bearer ${runner.token}`, "content-type": "application/json" },
        body: JSON.stringify({ first_line: next, lines: [{ text }] }),
      });
      next = ((await res.json()) as { next_line: number }).next_line;
    };
    const openRoost = async () => {
      const { token: st } = (await http(daemon.url, "POST", `/v1/builds/${job.build.id}/stream-token`, { token })).body;
      return fetch(`${daemon.url}/v1/builds/${job.build.id}/logs/stream?token=${st}&last_event_id=${next}`);
    };
    const openBare = () => fetch(`${bareUrl}/stream`);
    const publishBare = async (text: string) => void (await fetch(`${bareUrl}/publish`, { method: "POST", body: text }));
    for (const n of [1, 100, 1000]) {
      const rounds = n === 1000 ? 5 : 20;
      const ours = await sseLatency(openRoost, append, n, rounds);
      const base = await sseLatency(openBare, publishBare, n, rounds);
      record({
        scenario: `SSE delivery, ${n} subscriber(s)`,
        metric: "p50 append → receipt",
        roost: pct(ours, 0.5),
        baseline: pct(base, 0.5),
        baselineName: "bare Bun SSE fan-out",
        higherIsBetter: false,
        unit: "ms",
      });
      record({
        scenario: `SSE delivery, ${n} subscriber(s)`,
        metric: "p99 append → receipt",
        roost: pct(ours, 0.99),
        baseline: pct(base, 0.99),
        baselineName: "bare Bun SSE fan-out",
        higherIsBetter: false,
        unit: "ms",
      });
      measured.set(`sse ${n} p50 ratio`, pct(ours, 0.5) / pct(base, 0.5));
      measured.set(`sse ${n} p99 ratio`, pct(ours, 0.99) / pct(base, 0.99));
    }
    // Memory with 1000 open streams, each process measured with its streams open.
    const held = await Promise.all(Array.from({ length: 1000 }, openRoost));
    const heldBare = await Promise.all(Array.from({ length: 1000 }, openBare));
    await Bun.sleep(1500);
    const [heldRss, heldBareRss] = [rssOf(daemon.process.pid), rssOf(barePid)];
    record({
      scenario: "1000 open SSE streams",
      metric: "RSS of the serving process",
      roost: heldRss / 1024,
      baseline: heldBareRss / 1024,
      baselineName: "bare Bun SSE fan-out",
      higherIsBetter: false,
      unit: "MiB",
    });
    record({
      scenario: "1000 open SSE streams",
      metric: "RSS added (with the streams open, less before the first stream)",
      roost: (heldRss - idleRss) / 1024,
      baseline: (heldBareRss - idleBareRss) / 1024,
      baselineName: "bare Bun SSE fan-out",
      higherIsBetter: false,
      unit: "MiB",
    });
    measured.set("sse rss added", (heldRss - idleRss) / 1024);
    await Promise.all([...held, ...heldBare].map((r) => r.body?.cancel()));
    await ci.stop();
  } finally {
    bare.kill();
    await bare.exited;
    rmSync(bareDir, { recursive: true, force: true });
    await daemon.stop();
  }
}

/** A scheduler tick and a full retention pass over 100,000 builds (scripts/bench/schedules-retention.ts). */
async function schedulesRetentionScenario(): Promise<void> {
  const { schedulesRetentionRows } = await import("./bench/schedules-retention.ts");
  for (const row of await schedulesRetentionRows()) record(row);
}

/** Test results: a 10,000-test report read and recorded, history at a million stored results (scripts/bench/test-results.ts). */
async function testResultsScenario(): Promise<void> {
  const { testResultsRows } = await import("./bench/test-results.ts");
  for (const row of await testResultsRows()) record(row);
}

/** What scripts/bench/scale.ts's scenarios borrow from this report. */
function scaleContext() {
  return {
    record,
    measure: (key: string, value: number) => void measured.set(key, value),
    note: (text: string) => void notes.push(text),
    daemonEnv: (name: string) => daemonEnv(name),
    owner,
    pushDeliveries,
    durationMs: DURATION_MS,
    cpuMsOf,
  };
}

/**
 * A scenario of scripts/bench/scale.ts, loaded when it runs: lists (the dashboard and /metrics at
 * 10,000 and 1,000,000 builds, /readyz under the heaviest list), claim (100,000 builds queued
 * behind a full pipeline against one), webhook-file (pushes with roost.yaml served against
 * without), statuses (a burst of 2,000 pushes).
 */
const scaleScenario = (name: "listsAtScale" | "claimAtScale" | "webhookWithFile" | "statusBurst") => async () =>
  (await import("./bench/scale.ts"))[name](scaleContext());

/** The runner's dependency cache: the second build of a commit against the first (scripts/bench/cache.ts). */
async function cacheScenario(): Promise<void> {
  const { cacheRows } = await import("./bench/cache.ts");
  for (const row of await cacheRows()) record(row);
}

/** One daemon on sqld over loopback beside the same daemon on its file (scripts/bench/sqld.ts). */
async function sqldScenario(): Promise<void> {
  const { sqldRows } = await import("./bench/sqld.ts");
  const { rows: sqldFigures, ratios } = await sqldRows(notes);
  for (const row of sqldFigures) record(row);
  for (const [key, value] of Object.entries(ratios)) measured.set(key, value);
}

/** Three daemons on one sqld beside one daemon on its file, under 100 runners (scripts/bench/cluster.ts). */
async function clusterScenario(): Promise<void> {
  const { clusterRows } = await import("./bench/cluster.ts");
  const { rows: figures, ratios } = await clusterRows(notes);
  for (const row of figures) record(row);
  for (const [key, value] of Object.entries(ratios)) measured.set(key, value);
}

/** Claim → finish by 20 and by 100 runners on one daemon, and against a bare server (scripts/bench/fleet.ts). */
async function fleetScenario(): Promise<void> {
  const { fleetRows } = await import("./bench/fleet.ts");
  const { rows, ratios } = await fleetRows(notes);
  for (const row of rows) record(row);
  for (const [key, value] of Object.entries(ratios)) measured.set(key, value);
}

/** Start-up time of the compiled binary to a ready /readyz, its size and idle RSS. */
/** The web app's shipped size (lib/web/build.ts), against its budget of 100 KB of gzipped JavaScript. */
async function webScenario(): Promise<void> {
  const { JS_BUDGET_GZIP_BYTES, buildWebAssets, measure } = await import("../lib/web/build.ts");
  const sizes = measure(await buildWebAssets());
  record({
    scenario: "web app",
    metric: "JavaScript shipped, gzipped",
    roost: sizes.jsGzip / 1024,
    baseline: JS_BUDGET_GZIP_BYTES / 1024,
    baselineName: "budget",
    higherIsBetter: false,
    unit: "KB",
  });
  record({
    scenario: "web app",
    metric: "all files (HTML, JS, CSS), gzipped",
    roost: sizes.totalGzip / 1024,
    baseline: JS_BUDGET_GZIP_BYTES / 1024,
    baselineName: "budget",
    higherIsBetter: false,
    unit: "KB",
  });
  // The first and the last line of a finished 100,000-line build in Chromium (scripts/bench/web-log.ts).
  const { webLogRows } = await import("./bench/web-log.ts");
  for (const row of await webLogRows(notes)) record(row);
}

async function binaryScenario(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "roost-bench-bin-"));
  try {
    const binary = await buildBinary({ outfile: join(dir, "roost") });
    const size = statSync(binary).size;
    /** Starts `roost serve` in `dir` (its data directory ./data), waits for a ready /readyz; the time it took and the process. */
    const start = async () => {
      const started = performance.now();
      const child = Bun.spawn([binary, "serve"], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? "", ROOST_LISTEN: "127.0.0.1:0", ROOST_LOG_LEVEL: "info" },
        stdout: "ignore",
        stderr: "pipe",
      });
      let url = "";
      const decoder = new TextDecoder();
      let buffer = "";
      for await (const chunk of child.stderr as ReadableStream<Uint8Array>) {
        buffer += decoder.decode(chunk);
        const line = buffer.split("\n").find((l) => l.includes('"roost listening"'));
        if (line) {
          url = JSON.parse(line).url;
          break;
        }
      }
      while (
        (await fetch(url + "/readyz").then(
          (r) => r.status,
          () => 0,
        )) !== 200
      )
        await Bun.sleep(2);
      return { ms: performance.now() - started, child };
    };
    // The first start creates the database (every migration); a restart finds it at the latest version.
    const first = await start();
    const startupMs = first.ms;
    await Bun.sleep(1000);
    const rss = rssOf(first.child.pid);
    first.child.kill("SIGTERM");
    await first.child.exited;
    const again = await start();
    const restartMs = again.ms;
    again.child.kill("SIGTERM");
    await again.child.exited;

    // Baselines: a bare Bun.serve script started the same way, and the bun runtime's own size.
    const bareStarted = performance.now();
    const bare = await bareServer("{}");
    const bareStartupMs = performance.now() - bareStarted;
    await Bun.sleep(1000);
    const bareRss = rssOf(bare.pid);
    await bare.stop();
    const bunSize = statSync(resolve(ROOT, "node_modules/bun/bin/bun.exe")).size;
    for (const [metric, roost] of [
      ["start-up to ready /readyz", startupMs],
      ["restart to ready /readyz (the database already migrated)", restartMs],
    ] as const)
      record({ scenario: "compiled binary", metric, roost, baseline: bareStartupMs, baselineName: "bare Bun.serve script", higherIsBetter: false, unit: "ms" });
    record({
      scenario: "compiled binary",
      metric: "size",
      roost: size / 1024 / 1024,
      baseline: bunSize / 1024 / 1024,
      baselineName: "the bun runtime alone",
      higherIsBetter: false,
      unit: "MiB",
    });
    record({
      scenario: "compiled binary",
      metric: "idle RSS",
      roost: rss / 1024,
      baseline: bareRss / 1024,
      baselineName: "bare Bun.serve",
      higherIsBetter: false,
      unit: "MiB",
    });
    measured.set("binary start ms", startupMs);
    measured.set("binary idle rss", rss / 1024);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** CPU time (user + system) a process has used so far, in milliseconds (proc(5): utime and stime, in clock ticks of 10 ms). */
export function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

export function rssOf(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

interface Target {
  what: string;
  /** What is wanted, as the table shows it: a comparison, a bound and its unit ("≥ 0.8", "< 150 ms", "≤ 1.5×"). */
  target: string;
  key: string;
  met(value: number): boolean;
  show(value: number): string;
}

/**
 * The performance targets Roost is held to, checked against this run (the Targets table of
 * docs/benchmarks.md): the measured figure's key | what is wanted | what it is. A bound without a
 * unit is a ratio; the figure is shown in the bound's unit.
 */
const TARGETS: Target[] = `
fleet 100/20 ratio             | ≥ 2         | runner fleet: claim → finish jobs/s with 100 runners, ratio to 20 runners (one daemon, local file; jobs that take no time, so both fleets saturate the two cores)
fleet working 100/20 ratio     | ≥ 2         | the same with each job held 200 ms between claim and finish (BENCH_FLEET_JOB_MS), as a job runs
fleet bare ratio               | ≥ 0.15      | runner fleet: claim → finish jobs/s with 100 runners, ratio to a bare Bun.serve with the same client
cluster builds ratio           | ≥ 0.8       | the team's day (25 pushes/s, 100 runners, jobs of 1–5 s at 50 lines/s): builds finished by three daemons on one sqld (WebSocket, loopback), ratio to one daemon on its local file
cluster append p99 ms          | < 1,000 ms  | the same day: log append p99, three daemons on one sqld
cluster lost jobs              | = 0         | the same day: jobs declared lost while their runner heartbeat (2 s heartbeat, 6 s lease), three daemons on one sqld
api-tokens ratio               | ≥ 0.15      | authenticated GET /v1/api-tokens, ratio to bare Bun.serve (wrk, 32 connections)
webhook builds/s               | ≥ 1,800/s   | verified GitHub push → build committed before the 2xx, 64 connections, distinct pushes
POST builds builds/s           | ≥ 2,000/s   | POST /v1/projects/{id}/builds, builds committed
sse 1000 p50 ratio             | ≤ 1.5×      | SSE append → receipt, 1000 subscribers, p50 ratio to bare fan-out
sse 1000 p99 ratio             | ≤ 1.5×      | SSE append → receipt, 1000 subscribers, p99 ratio to bare fan-out
sse rss added                  | < 50 MiB    | RSS added by 1000 open SSE streams
two processes stall            | < 50 ms     | two processes writing one database file: longest event-loop stall in either
binary start ms                | < 150 ms    | compiled binary: start to ready
binary idle rss                | < 60 MiB    | compiled binary: idle RSS
log ingest ratio               | ≥ 0.8       | log ingest, ratio to raw inserts
sqld ws webhook ratio          | ≥ 0.5       | webhook pushes on sqld over loopback (WebSocket), ratio to the local file
sqld ws log append ratio       | ≥ 0.5       | log appends of 20 runners on sqld over loopback (WebSocket), ratio to the local file
sqld http webhook ratio        | ≥ 0.5       | webhook pushes on sqld over loopback (HTTP), ratio to the local file
sqld http log append ratio     | ≥ 0.5       | log appends of 20 runners on sqld over loopback (HTTP), ratio to the local file
lists worst ratio              | ≤ 1.5×      | every builds list and filter, the dashboard's requests and /metrics: p50 at 1,000,000 builds over 10,000 (the worst)
lists worst cpu ratio          | ≤ 1.5×      | the same, by the server's CPU time per request (the worst)
readyz p99 under heaviest list | < 50 ms     | /readyz p99 while the heaviest list runs at 1,000,000 builds
claim 100k ratio               | ≤ 1.5×      | runner claim with 100,000 builds queued over one (median)
webhook file ratio             | ≥ 0.9       | webhook pushes with roost.yaml served over without
statuses burst max ms          | ≤ 10,000 ms | burst of 2,000 pushes: longest push → its commit status at the host
statuses posted twice          | = 0         | burst of 2,000 pushes: statuses posted twice or not at all
`
  .trim()
  .split("\n")
  .map((line) => {
    const [key, target, what] = line.split(" | ").map((cell) => cell.trim()) as [string, string, string];
    const [, op, number, unit] = /^(≥|≤|<|=) ([\d,.]+)\s*(.*)$/.exec(target)!;
    const bound = Number(number!.replaceAll(",", ""));
    const met = { "≥": (v: number) => v >= bound, "≤": (v: number) => v <= bound, "<": (v: number) => v < bound, "=": (v: number) => v === bound }[op!]!;
    const show = (v: number) =>
      op === "=" ? String(v) : unit === "" ? v.toFixed(3) : unit === "×" ? `${v.toFixed(2)}×` : `${fmt(v)}${unit === "/s" ? "" : " "}${unit}`;
    return { key, target, what, met, show };
  });

/** Hand-written analysis below this heading in docs/benchmarks.md survives a regeneration. */
const KEPT_HEADING = "## Where the time goes";

/**
 * The report. A run of every scenario rewrites docs/benchmarks.md; a run of named scenarios would
 * drop every other scenario's figures from it, so it writes its own page beside it instead
 * (docs/benchmarks-<names>.md, not tracked) unless BENCH_WRITE_DOCS=1 says to replace the page.
 */
function writeReport(loadAtStart: number[], only: string[]): string {
  const page = join(ROOT, "docs/benchmarks.md");
  const file = only.length && process.env.BENCH_WRITE_DOCS !== "1" ? join(ROOT, `docs/benchmarks-${only.join("-")}.md`) : page;
  let kept = "";
  try {
    const old = readFileSync(page, "utf8");
    const at = old.indexOf(KEPT_HEADING);
    if (at >= 0) kept = old.slice(at);
  } catch {
    // No previous report.
  }
  const cpu = cpus()[0]?.model ?? "unknown CPU";
  const targets = TARGETS.filter((t) => measured.has(t.key));
  const lines = [
    "# Benchmarks",
    "",
    "Produced by `npm run bench` (scripts/bench.ts). Every figure sits beside a baseline measured in",
    "the same run on the same machine; compare the ratios, not the absolute numbers, across machines.",
    `HTTP load: wrk (${WRK_THREADS} threads, ${CONNECTIONS} connections; ${WEBHOOK_CONNECTIONS} for webhooks) for ${DURATION_MS / 1000} s per measurement, each after a ${WARMUP_MS / 1000} s run against the same server that is not counted,`,
    "on the same host as the server, so wrk and the server share its CPUs; the bare Bun.serve baseline is loaded by the same wrk script.",
    "",
    `Machine: ${cpus().length} × ${cpu}, ${(totalmem() / 1024 ** 3).toFixed(0)} GiB RAM, ${process.platform}-${process.arch}, Bun ${Bun.version}. Finished at ${new Date().toISOString()};`,
    `load average ${loadAtStart.map((n) => n.toFixed(2)).join(", ")} (1, 5, 15 min) when it started.`,
    "",
    ...(targets.length
      ? [
          "## Targets",
          "",
          "| target | wanted | measured | met |",
          "|---|---|---|---|",
          ...targets.map((t) => `| ${t.what} | ${t.target} | ${t.show(measured.get(t.key)!)} | ${t.met(measured.get(t.key)!) ? "yes" : "**no**"} |`),
          "",
        ]
      : []),
    "## Figures",
    "",
    "| scenario | metric | Roost | baseline | ratio (Roost / baseline) |",
    "|---|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${r.scenario} | ${r.metric} | ${fmt(r.roost)} ${r.unit} | ${fmt(r.baseline)} ${r.unit} (${r.baselineName}) | ${(r.roost / r.baseline).toFixed(3)} ${r.higherIsBetter ? "(higher is better)" : "(lower is better)"} |`,
    ),
    "",
    ...(notes.length ? ["Notes:", "", ...notes.map((n) => `- ${n}`), ""] : []),
    ...(kept ? [kept.trimEnd(), ""] : []),
  ];
  writeFileSync(file, lines.join("\n"));
  return file;
}

export const scenarios: Record<string, () => Promise<void>> = {
  healthz: healthzScenario,
  "api-tokens": apiTokensScenario,
  builds: buildsScenario,
  webhooks: webhooksScenario,
  "two-processes": twoProcessesScenario,
  logs: logsScenario,
  sse: sseScenario,
  binary: binaryScenario,
  web: webScenario,
  "schedules-retention": schedulesRetentionScenario,
  cache: cacheScenario,
  "test-results": testResultsScenario,
  sqld: sqldScenario,
  cluster: clusterScenario,
  lists: scaleScenario("listsAtScale"),
  claim: scaleScenario("claimAtScale"),
  fleet: fleetScenario,
  "webhook-file": scaleScenario("webhookWithFile"),
  statuses: scaleScenario("statusBurst"),
};

if (import.meta.main) {
  // Bun's fetch opens at most 256 connections to a host by default; the 1000-stream figures need more.
  if (!process.env.BUN_CONFIG_MAX_HTTP_REQUESTS) {
    const again = Bun.spawn([BUN, import.meta.path, ...process.argv.slice(2)], {
      env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" },
      stdout: "inherit",
      stderr: "inherit",
    });
    process.exit(await again.exited);
  }
  if (Bun.which("wrk") === null) {
    console.error("wrk is not installed: run scripts/ensure-bench-tools (npm run bench does)");
    process.exit(1);
  }
  const only = process.argv.slice(2);
  const loadAtStart = loadavg();
  const began = performance.now();
  for (const [name, run] of Object.entries(scenarios)) {
    if (only.length && !only.includes(name)) continue;
    console.log(`== ${name}`);
    await run();
  }
  const file = writeReport(loadAtStart, only);
  console.log(`wrote ${relative(ROOT, file)} in ${((performance.now() - began) / 1000).toFixed(0)} s`);
}
