// `npm run bench`: Roost's performance figures, each beside a baseline measured in the same run
// and printed as a ratio (absolute numbers drift between machines and runs; ratios travel).
// Writes docs/benchmarks.md with the machine it ran on. Takes a few minutes; bounded.
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, totalmem, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { BUN, http, startDaemon, type Daemon } from "../tests/helpers/daemon.ts";
import type { LoadResult, LoadSpec } from "./bench/load.ts";
import { buildBinary } from "./build.ts";

const ROOT = resolve(import.meta.dir, "..");
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 5000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);

interface Row {
  scenario: string;
  metric: string;
  roost: number;
  baseline: number;
  baselineName: string;
  /** Whether a larger number is better (throughput) or worse (latency, memory, time). */
  higherIsBetter: boolean;
  unit: string;
}
const rows: Row[] = [];
const notes: string[] = [];

function record(row: Row): void {
  rows.push(row);
  const ratio = row.roost / row.baseline;
  console.log(`${row.scenario} · ${row.metric}: roost ${fmt(row.roost)} ${row.unit} vs ${row.baselineName} ${fmt(row.baseline)} ${row.unit} (×${ratio.toFixed(3)})`);
}

function fmt(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(2);
}

/** Runs the load generator in its own process. */
export async function load(spec: LoadSpec): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), "roost-load-"));
  const file = join(dir, "spec.json");
  writeFileSync(file, JSON.stringify(spec));
  const child = Bun.spawn([BUN, join(ROOT, "scripts/bench/load.ts"), file], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(child.stdout).text();
  await child.exited;
  rmSync(dir, { recursive: true, force: true });
  return JSON.parse(out.trim().split("\n").pop()!) as LoadResult;
}

/** A bare Bun.serve answering `body`; returns its url and a stop function. */
export async function bareServer(body: string): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "roost-bare-"));
  writeFileSync(join(dir, "body.json"), body);
  const child = Bun.spawn([BUN, join(ROOT, "scripts/bench/bare-server.ts"), join(dir, "body.json")], { stdout: "pipe", stderr: "inherit" });
  const reader = (child.stdout as ReadableStream<Uint8Array>).getReader();
  const { value } = await reader.read();
  const { url } = JSON.parse(new TextDecoder().decode(value).trim().split("\n")[0]!) as { url: string };
  return {
    url,
    async stop() {
      child.kill();
      await child.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Throughput and p99 of one Roost request against the bare server answering the same bytes. */
export async function compareWithBare(scenario: string, daemon: Daemon, spec: Omit<LoadSpec, "url" | "connections" | "durationMs"> & { path: string }): Promise<void> {
  // The probe is the load's first request (so a signed delivery is probed signed); its status is what every request should answer.
  const probe = await fetch(daemon.url + spec.path, { method: spec.method, headers: { ...spec.headers, ...spec.headerSets?.[0] }, body: Array.isArray(spec.body) ? spec.body[0] : spec.body });
  const body = await probe.text();
  const bare = await bareServer(body);
  try {
    const base = await load({ ...spec, url: bare.url + spec.path, connections: CONNECTIONS, durationMs: DURATION_MS });
    const ours = await load({ ...spec, url: daemon.url + spec.path, connections: CONNECTIONS, durationMs: DURATION_MS, expectStatus: probe.status });
    if (ours.errors > 0) notes.push(`${scenario}: ${ours.errors} of ${ours.requests} Roost responses had an unexpected status.`);
    record({ scenario, metric: "requests/s", roost: ours.rps, baseline: base.rps, baselineName: "bare Bun.serve", higherIsBetter: true, unit: "req/s" });
    record({ scenario, metric: "p99 latency", roost: ours.p99_ms, baseline: base.p99_ms, baselineName: "bare Bun.serve", higherIsBetter: false, unit: "ms" });
  } finally {
    await bare.stop();
  }
}

async function owner(daemon: Daemon): Promise<string> {
  const login = await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "bench@example.test" } });
  const token = await http(daemon.url, "POST", "/v1/api-tokens", { token: login.body.session_token, body: { name: "bench", role: "owner" } });
  return token.body.token as string;
}

async function apiTokensScenario(): Promise<void> {
  const daemon = await startDaemon({ env: { ROOST_LOG_LEVEL: "warn" } });
  try {
    const token = await owner(daemon);
    for (let i = 0; i < 20; i++) await http(daemon.url, "POST", "/v1/api-tokens", { token, body: { name: `listed-${i}`, role: "developer" } });
    await compareWithBare("GET /v1/api-tokens (API token auth)", daemon, { path: "/v1/api-tokens", headers: { authorization: `Bearer ${token}` } });
  } finally {
    await daemon.stop();
  }
}

/** A daemon with a GitHub integration (against the host API stand-in), a project and a pipeline. */
async function ciFixture(daemon: Daemon, token: string, webhookSecret: string): Promise<{ projectId: string; pipelineId: string; stop(): Promise<void> }> {
  const { startHostApiStandIn } = await import("../tests/support/host-api-stand-in.ts");
  const host = await startHostApiStandIn();
  host.github.repos.push({ id: 4242, full_name: "acme/app", default_branch: "main", private: true });
  await http(daemon.url, "POST", "/v1/integrations", {
    token,
    body: { provider: "github", name: "gh", api_url: host.url, app_id: host.github.appId, installation_id: host.github.installationId, private_key: host.github.privateKeyPem, webhook_secret: webhookSecret },
  });
  const repo = (await http(daemon.url, "GET", "/v1/integration-repositories", { token })).body.repositories[0];
  const project = (await http(daemon.url, "POST", "/v1/projects", { token, body: { repository_id: repo.id } })).body.project;
  const pipeline = (await http(daemon.url, "POST", `/v1/projects/${project.id}/pipelines`, { token, body: { name: "bench", trigger_config: { branches: ["**"] }, concurrency: { max_concurrent: 50 } } })).body.pipeline;
  return { projectId: project.id, pipelineId: pipeline.id, stop: () => host.stop() };
}

async function buildsScenario(): Promise<void> {
  const daemon = await startDaemon({ env: { ROOST_LOG_LEVEL: "warn" } });
  try {
    const token = await owner(daemon);
    const ci = await ciFixture(daemon, token, "bench-webhook-secret-0123");
    await compareWithBare("POST /v1/projects/{id}/builds (creates a build)", daemon, {
      path: `/v1/projects/${ci.projectId}/builds`,
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ pipeline_id: ci.pipelineId, commit_sha: "c".repeat(40) }),
    });
    await ci.stop();
  } finally {
    await daemon.stop();
  }
}

/** Verified GitHub push deliveries end to end: signature, dedupe, trigger match, build row. */
async function webhooksScenario(): Promise<void> {
  const { sign } = await import("@octokit/webhooks-methods");
  const secret = "bench-webhook-secret-0123";
  const daemon = await startDaemon({ env: { ROOST_LOG_LEVEL: "warn" } });
  try {
    const token = await owner(daemon);
    const ci = await ciFixture(daemon, token, secret);
    // Distinct deliveries (ids, commits, bodies), so none is a duplicate: each one creates a build.
    const bodies: string[] = [];
    const headerSets: Record<string, string>[] = [];
    for (let i = 0; i < 30_000; i++) {
      const sha = i.toString(16).padStart(40, "0");
      const body = JSON.stringify({ ref: "refs/heads/main", deleted: false, after: sha, head_commit: { id: sha, message: `commit ${i}` }, commits: [{ id: sha, message: `commit ${i}` }], repository: { id: 4242, full_name: "acme/app" }, pusher: { name: "bench" } });
      bodies.push(body);
      headerSets.push({ "x-github-delivery": crypto.randomUUID(), "x-hub-signature-256": await sign(secret, body) });
    }
    await compareWithBare("POST /v1/webhooks/github (verified push → build)", daemon, {
      path: "/v1/webhooks/github",
      method: "POST",
      headers: { "content-type": "application/json", "x-github-event": "push" },
      body: bodies,
      headerSets,
    });
    const built = (await http(daemon.url, "GET", `/v1/projects/${ci.projectId}/builds?trigger_type=webhook&limit=1`, { token })).body.total;
    notes.push(`webhooks: ${built} builds created from distinct verified deliveries during the run.`);
    await ci.stop();
  } finally {
    await daemon.stop();
  }
}

/** A daemon with one runner that has claimed `jobs` builds, ready to append logs. */
async function runnerFixture(daemon: Daemon, token: string, jobs: number) {
  const ci = await ciFixture(daemon, token, "bench-webhook-secret-0123");
  for (let i = 0; i < jobs; i++) await http(daemon.url, "POST", `/v1/projects/${ci.projectId}/builds`, { token, body: { pipeline_id: ci.pipelineId, commit_sha: "c".repeat(40) } });
  const created = (await http(daemon.url, "POST", "/v1/runners", { token, body: { name: "bench" } })).body;
  const runner = { id: created.runner.id as string, token: created.token as string };
  await http(daemon.url, "POST", `/v1/runners/${runner.id}/connect`, { token: runner.token, body: { capabilities: { os: "linux", arch: "x64" } } });
  const claimed: { job_id: string; build: { id: string } }[] = [];
  for (let i = 0; i < jobs; i++) claimed.push((await http(daemon.url, "POST", `/v1/runners/${runner.id}/jobs/claim`, { token: runner.token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } })).body.job);
  return { ci, runner, claimed };
}

const LINE = "I/flutter ( 4321): Running Gradle task 'assembleRelease'... [bench line padding to ~100 bytes]";

/** Log ingest through the HTTP append path vs raw libSQL inserts of the same rows. */
async function logsScenario(): Promise<void> {
  const daemon = await startDaemon({ env: { ROOST_LOG_LEVEL: "warn" } });
  try {
    const token = await owner(daemon);
    const { ci, runner, claimed } = await runnerFixture(daemon, token, 8);
    const batch = 500;
    let lines = 0;
    const deadline = performance.now() + DURATION_MS;
    const began = performance.now();
    await Promise.all(
      claimed.map(async (job) => {
        let next = 0;
        while (performance.now() < deadline) {
          const res = await fetch(`${daemon.url}/v1/runners/${runner.id}/jobs/${job.job_id}/logs`, {
            method: "POST",
            headers: { authorization: `Bearer ${runner.token}`, "content-type": "application/json" },
            body: JSON.stringify({ first_line: next, lines: Array.from({ length: batch }, (_, i) => ({ step: "build", text: `${LINE} ${next + i}` })) }),
          });
          const body = (await res.json()) as { next_line: number };
          lines += body.next_line - next;
          next = body.next_line;
        }
      }),
    );
    const seconds = (performance.now() - began) / 1000;
    const bytes = lines * (LINE.length + 6);
    // Baseline: the same rows straight into the database, 500 per transaction, through the same Db (bun:sqlite).
    const { openDatabase, inTransaction } = await import("../lib/db/client.ts");
    const { migrate } = await import("../lib/db/migrate.ts");
    const dir = mkdtempSync(join(tmpdir(), "roost-bench-raw-"));
    const raw = await openDatabase(`file:${join(dir, "raw.db")}`);
    await migrate(raw, () => 1);
    // The same columns and key as build_logs, without the foreign key to builds.
    await raw.execute("CREATE TABLE raw_logs (build_id TEXT NOT NULL, seq INTEGER NOT NULL, job_id TEXT NOT NULL, line INTEGER NOT NULL, step TEXT NOT NULL, stream TEXT NOT NULL, ts INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (build_id, seq))");
    let rawLines = 0;
    const rawDeadline = performance.now() + DURATION_MS;
    const rawBegan = performance.now();
    while (performance.now() < rawDeadline) {
      await inTransaction(raw, async (tx) => {
        for (let i = 0; i < batch; i++, rawLines++) await tx.execute({ sql: "INSERT INTO raw_logs (build_id, seq, job_id, line, step, stream, ts, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", args: ["b", rawLines + 1, "j", rawLines, "build", "stdout", 1, `${LINE} ${rawLines}`] });
      });
    }
    const rawSeconds = (performance.now() - rawBegan) / 1000;
    raw.close();
    rmSync(dir, { recursive: true, force: true });
    record({ scenario: "log ingest (HTTP append, 8 jobs, 500-line batches)", metric: "lines/s", roost: lines / seconds, baseline: rawLines / rawSeconds, baselineName: "raw SQLite inserts, 500 per transaction", higherIsBetter: true, unit: "lines/s" });
    record({ scenario: "log ingest (HTTP append, 8 jobs, 500-line batches)", metric: "MB/s", roost: bytes / seconds / 1e6, baseline: (rawLines * (LINE.length + 6)) / rawSeconds / 1e6, baselineName: "raw libSQL inserts", higherIsBetter: true, unit: "MB/s" });
    await ci.stop();
  } finally {
    await daemon.stop();
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
  const daemon = await startDaemon({ env: { ROOST_LOG_LEVEL: "warn" } });
  const bareDir = mkdtempSync(join(tmpdir(), "roost-bare-sse-"));
  const bare = Bun.spawn([BUN, join(ROOT, "scripts/bench/bare-sse.ts")], { stdout: "pipe", stderr: "inherit" });
  try {
    const reader = (bare.stdout as ReadableStream<Uint8Array>).getReader();
    const { url: bareUrl, pid: barePid } = JSON.parse(new TextDecoder().decode((await reader.read()).value).trim()) as { url: string; pid: number };
    const token = await owner(daemon);
    const { ci, runner, claimed } = await runnerFixture(daemon, token, 1);
    const job = claimed[0]!;
    let next = 0;
    const append = async (text: string) => {
      const res = await fetch(`${daemon.url}/v1/runners/${runner.id}/jobs/${job.job_id}/logs`, { method: "POST", headers: { authorization: `Bearer ${runner.token}`, "content-type": "application/json" }, body: JSON.stringify({ first_line: next, lines: [{ text }] }) });
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
      record({ scenario: `SSE delivery, ${n} subscriber(s)`, metric: "p50 append → receipt", roost: pct(ours, 0.5), baseline: pct(base, 0.5), baselineName: "bare Bun SSE fan-out", higherIsBetter: false, unit: "ms" });
      record({ scenario: `SSE delivery, ${n} subscriber(s)`, metric: "p99 append → receipt", roost: pct(ours, 0.99), baseline: pct(base, 0.99), baselineName: "bare Bun SSE fan-out", higherIsBetter: false, unit: "ms" });
    }
    // Memory with 1000 open streams, each process measured with its streams open.
    const held = await Promise.all(Array.from({ length: 1000 }, openRoost));
    const heldBare = await Promise.all(Array.from({ length: 1000 }, openBare));
    await Bun.sleep(1500);
    record({ scenario: "1000 open SSE streams", metric: "RSS of the serving process", roost: rssOf(daemon.process.pid) / 1024, baseline: rssOf(barePid) / 1024, baselineName: "bare Bun SSE fan-out", higherIsBetter: false, unit: "MiB" });
    await Promise.all([...held, ...heldBare].map((r) => r.body?.cancel()));
    await ci.stop();
  } finally {
    bare.kill();
    await bare.exited;
    rmSync(bareDir, { recursive: true, force: true });
    await daemon.stop();
  }
}

/** Start-up time of the compiled binary to a ready /readyz, its size and idle RSS. */
async function binaryScenario(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "roost-bench-bin-"));
  try {
    const binary = await buildBinary({ outfile: join(dir, "roost") });
    const size = statSync(binary).size;
    const started = performance.now();
    const child = Bun.spawn([binary, "serve"], { cwd: dir, env: { PATH: process.env.PATH ?? "", ROOST_LISTEN: "127.0.0.1:0", ROOST_LOG_LEVEL: "info" }, stdout: "ignore", stderr: "pipe" });
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
    while ((await fetch(url + "/readyz").then((r) => r.status, () => 0)) !== 200) await Bun.sleep(2);
    const startupMs = performance.now() - started;
    await Bun.sleep(1000);
    const rss = rssOf(child.pid);
    child.kill("SIGTERM");
    await child.exited;

    // Baselines: a bare Bun.serve script started the same way, and the bun runtime's own size.
    const bareStarted = performance.now();
    const bare = await bareServer("{}");
    const bareStartupMs = performance.now() - bareStarted;
    await Bun.sleep(1000);
    const bareRss = await (async () => {
      const pids = (await new Response(Bun.spawn(["pgrep", "-f", "scripts/bench/bare-server.ts"], { stdout: "pipe" }).stdout).text()).trim().split("\n");
      return rssOf(Number(pids[0]));
    })();
    await bare.stop();
    const bunSize = statSync(resolve(ROOT, "node_modules/bun/bin/bun.exe")).size;
    record({ scenario: "compiled binary", metric: "start-up to ready /readyz", roost: startupMs, baseline: bareStartupMs, baselineName: "bare Bun.serve script", higherIsBetter: false, unit: "ms" });
    record({ scenario: "compiled binary", metric: "size", roost: size / 1024 / 1024, baseline: bunSize / 1024 / 1024, baselineName: "the bun runtime alone", higherIsBetter: false, unit: "MiB" });
    record({ scenario: "compiled binary", metric: "idle RSS", roost: rss / 1024, baseline: bareRss / 1024, baselineName: "bare Bun.serve", higherIsBetter: false, unit: "MiB" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function rssOf(pid: number): number {
  try {
    const status = require("node:fs").readFileSync(`/proc/${pid}/status`, "utf8") as string;
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

function writeReport(): void {
  const cpu = cpus()[0]?.model ?? "unknown CPU";
  const lines = [
    "# Benchmarks",
    "",
    "Produced by `npm run bench` (scripts/bench.ts). Every figure sits beside a baseline measured in",
    "the same run on the same machine; compare the ratios, not the absolute numbers, across machines.",
    `Load: ${CONNECTIONS} concurrent connections for ${DURATION_MS / 1000} s per measurement, from a separate Bun process on the same host.`,
    "",
    `Machine: ${cpus().length} × ${cpu}, ${(totalmem() / 1024 ** 3).toFixed(0)} GiB RAM, ${process.platform}-${process.arch}, Bun ${Bun.version}. Run at ${new Date().toISOString()}.`,
    "",
    "| scenario | metric | Roost | baseline | ratio (Roost / baseline) |",
    "|---|---|---|---|---|",
    ...rows.map((r) => `| ${r.scenario} | ${r.metric} | ${fmt(r.roost)} ${r.unit} | ${fmt(r.baseline)} ${r.unit} (${r.baselineName}) | ${(r.roost / r.baseline).toFixed(3)} ${r.higherIsBetter ? "(higher is better)" : "(lower is better)"} |`),
    "",
    ...(notes.length ? ["Notes:", "", ...notes.map((n) => `- ${n}`), ""] : []),
  ];
  writeFileSync(join(ROOT, "docs/benchmarks.md"), lines.join("\n"));
}

export const scenarios: Record<string, () => Promise<void>> = {
  "api-tokens": apiTokensScenario,
  builds: buildsScenario,
  webhooks: webhooksScenario,
  logs: logsScenario,
  sse: sseScenario,
  binary: binaryScenario,
};

if (import.meta.main) {
  // Bun's fetch opens at most 256 connections to a host by default; the 1000-stream figures need more.
  if (!process.env.BUN_CONFIG_MAX_HTTP_REQUESTS) {
    const again = Bun.spawn([BUN, import.meta.path, ...process.argv.slice(2)], { env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" }, stdout: "inherit", stderr: "inherit" });
    process.exit(await again.exited);
  }
  const only = process.argv.slice(2);
  const began = performance.now();
  for (const [name, run] of Object.entries(scenarios)) {
    if (only.length && !only.includes(name)) continue;
    console.log(`== ${name}`);
    await run();
  }
  writeReport();
  console.log(`wrote docs/benchmarks.md in ${((performance.now() - began) / 1000).toFixed(0)} s`);
}
