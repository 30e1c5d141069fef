// What a growing team touches, at 10,000 and at 1,000,000 builds (issue 20's targets), for
// `npm run bench` (scenarios lists, claim, webhook-file, statuses in scripts/bench.ts):
//   - lists: every builds listing and filter, the dashboard's requests and GET /metrics under wrk,
//     the same requests against a daemon whose database holds 10,000 builds and one with 1,000,000
//     (seeded by scripts/bench/seed-builds.ts); and /readyz's p99 while the heaviest of them runs;
//   - claim: a runner's claim (lib/runners/jobs.ts claimJob, in-process on the daemon's driver) with
//     100,000 builds queued behind a full pipeline, against the same with one;
//   - webhook-file: verified pushes with roost.yaml served by the host-API stand-in, against the
//     same pushes when the repository has no such file;
//   - statuses: a burst of 2,000 pushes, and when each build's status reached the stand-in.
// BENCH_SCALE_BUILDS overrides the larger database's size (a quick run: 100000).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, REPO_ROOT, ROOST, http, startDaemon, type Daemon } from "../../tests/helpers/daemon.ts";
import { pushPipelineFile } from "../../tests/helpers/pipeline-file.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../../tests/support/host-api-stand-in.ts";
import { runWrk, type RequestSpec, type WrkResult } from "./wrk.ts";
import { SEED_ROUTE, seedBuilds } from "./seed-builds.ts";
import { PIPELINE_FILE_EDIT_EVERY, PUSH_BRANCHES, githubProject } from "./github.ts";
import type { BenchRow } from "./row.ts";

/** What scripts/bench.ts lends these scenarios: its report and its daemon set-up. */
export interface BenchContext {
  record(row: BenchRow): void;
  measure(key: string, value: number): void;
  note(text: string): void;
  daemonEnv(name: string): Record<string, string>;
  /** An owner's API token on a fresh daemon. */
  owner(daemon: Daemon): Promise<string>;
  /** `n` distinct signed GitHub pushes of acme/app (id 4242), PUSH_BRANCHES branches of chained commits (scripts/bench.ts). */
  pushDeliveries(secret: string, n: number, tag: string): RequestSpec[];
  durationMs: number;
  /** CPU time (user + system) a process has used so far, in ms. */
  cpuMsOf(pid: number): number;
}

const SECRET = "bench-webhook-secret-0123";
const SMALL = 10_000;
const LARGE = Number(process.env.BENCH_SCALE_BUILDS ?? 1_000_000);
const LIST_MS = 2000;
const LIST_CONNECTIONS = 8;
/** Runs of each request on each side, alternating (the machine's other load falls on both alike). */
const ROUNDS = Number(process.env.BENCH_SCALE_ROUNDS ?? 3);
const PIPELINES = ["android", "ios", "web", "checks"];
/** Clients asking for the heaviest list at once while /readyz is timed. */
const READYZ_LOAD = 4;

interface World {
  daemon: Daemon;
  host: HostApiStandIn;
  token: string;
  projectId: string;
  pipelineIds: string[];
  stop(): Promise<void>;
}

/** A daemon with a GitHub integration against the stand-in, a project on acme/app and `pipelines`; the stand-in serves `file` as roost.yaml when given. */
async function world(
  ctx: BenchContext,
  name: string,
  options: { dataDir?: string; pipelines?: Record<string, unknown>[]; file?: string } = {},
): Promise<World> {
  const host = await startHostApiStandIn();
  host.github.repos.push({ id: 4242, full_name: "acme/app", default_branch: "main", private: true });
  if (options.file) host.files.set("acme/app:roost.yaml", options.file);
  const daemon = await startDaemon({ env: ctx.daemonEnv(name), ...(options.dataDir ? { dataDir: options.dataDir, cleanup: false } : {}) });
  const token = await ctx.owner(daemon);
  const projectId = await githubProject(daemon, token, host, SECRET);
  const pipelineIds: string[] = [];
  for (const body of options.pipelines ?? [])
    pipelineIds.push((await http(daemon.url, "POST", `/v1/projects/${projectId}/pipelines`, { token, body })).body.pipeline.id);
  return {
    daemon,
    host,
    token,
    projectId,
    pipelineIds,
    async stop() {
      await daemon.stop();
      await host.stop();
    },
  };
}

/** A note in docs/benchmarks.md that is also printed as the run goes. */
function say(ctx: BenchContext, text: string): void {
  console.log(`  ${text}`);
  ctx.note(text);
}

/** Prints whether a target is met; a miss makes `npm run bench` exit non-zero once the report is written. */
function verdict(what: string, met: boolean, measured: string): void {
  console.log(`  ${met ? "PASS" : "FAIL"} ${what}: ${measured}`);
  if (!met) process.exitCode = 1;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? 0;

/** The requests the lists scenario measures, by name, for one seeded world. */
function listRequests(w: World, oldestCursor: string): [string, RequestSpec][] {
  const auth = { authorization: `Bearer ${w.token}` };
  const p = `/v1/projects/${w.projectId}/builds`;
  const pl = `/v1/pipelines/${w.pipelineIds[0]}/builds`;
  const get = (path: string): RequestSpec => ({ path, headers: auth });
  return [
    ["a project's builds, first page", get(p)],
    ["a pipeline's builds, first page", get(pl)],
    ["status=running (0 match)", get(`${p}?status=running&limit=10`)],
    ["status=queued", get(`${p}?status=queued&limit=10`)],
    ["status=failed", get(`${p}?status=failed&limit=10`)],
    ["branch=main", get(`${p}?branch=main`)],
    ["branch=feature/7", get(`${p}?branch=feature%2F7`)],
    ["trigger_type=schedule", get(`${p}?trigger_type=schedule`)],
    ["a pipeline's builds, branch and status", get(`${pl}?branch=main&status=failed`)],
    ["a pipeline's builds, status=running", get(`${pl}?status=running`)],
    ["three filters (status, branch, trigger_type)", get(`${p}?status=canceled&branch=feature%2F7&trigger_type=manual`)],
    ["the oldest page (cursor)", get(`${p}?cursor=${oldestCursor}`)],
    ["include=total, branch=main", get(`${p}?branch=main&include=total`)],
    ["dashboard: projects", get("/v1/projects?limit=200")],
    ["dashboard: runners", get("/v1/runners")],
    ["dashboard: operator incidents", get("/v1/operator-incidents")],
    ["GET /metrics", { path: "/metrics" }],
  ];
}

const DASHBOARD = ["dashboard: projects", "status=running (0 match)", "status=queued", "status=failed", "dashboard: runners", "dashboard: operator incidents"];

/** BENCH_SCALE_DATA=<dir> keeps each seeded database there and reuses it in later runs (seeding a million builds takes minutes). */
const KEEP_DIR = process.env.BENCH_SCALE_DATA;

interface Kept {
  token: string;
  projectId: string;
  pipelineIds: string[];
  seedMs: number;
}

/**
 * A kept file made by an older Roost is migrated by `roost migrate` before its daemon starts, as
 * docs/operations.md "Upgrades" has an operator do on a large instance: an index built over a
 * million builds can outlast the daemon's start-up wait (tests/helpers/daemon.ts).
 */
async function migrateKept(ctx: BenchContext, builds: number, dataDir: string): Promise<void> {
  const started = performance.now();
  const proc = Bun.spawn([BUN, ROOST, "migrate"], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...ctx.daemonEnv(`migrate-${builds}`), ROOST_DATA_DIR: dataDir },
    cwd: REPO_ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`roost migrate on ${dataDir}: exit ${code}: ${err}`);
  const versions = /schema version (\d+) -> (\d+)/.exec(out);
  if (versions && versions[1] !== versions[2])
    say(
      ctx,
      `the kept ${builds.toLocaleString("en-US")}-build file migrated from schema ${versions[1]} to ${versions[2]} by roost migrate in ${((performance.now() - started) / 1000).toFixed(1)} s.`,
    );
}

/** A daemon on a database of `builds` builds: seeded now, or the one kept under BENCH_SCALE_DATA by an earlier run. */
async function seededWorld(ctx: BenchContext, builds: number): Promise<{ w: World; seedMs: number; reused: boolean }> {
  const dataDir = KEEP_DIR ? join(KEEP_DIR, `lists-${builds}`) : mkdtempSync(join(tmpdir(), `roost-bench-scale-${builds}-`));
  const keptFile = join(dataDir, "bench-world.json");
  if (KEEP_DIR && existsSync(keptFile)) {
    const kept = JSON.parse(readFileSync(keptFile, "utf8")) as Kept;
    await migrateKept(ctx, builds, dataDir);
    const host = await startHostApiStandIn();
    const daemon = await startDaemon({ env: ctx.daemonEnv(`lists-${builds}`), dataDir, cleanup: false });
    return { w: { daemon, host, ...kept, stop: async () => (await daemon.stop(), await host.stop()) }, seedMs: kept.seedMs, reused: true };
  }
  if (KEEP_DIR) mkdirSync(dataDir, { recursive: true });
  let w = await world(ctx, `lists-${builds}`, {
    dataDir,
    pipelines: PIPELINES.map((name) => ({ name, trigger_config: { branches: ["**"] }, concurrency: { max_concurrent: 5 } })),
  });
  // One build through the API for the snapshot the daemon freezes; canceled, it is history too.
  const first = (
    await http(w.daemon.url, "POST", `/v1/projects/${w.projectId}/builds`, {
      token: w.token,
      body: { pipeline_id: w.pipelineIds[0], commit_sha: "b".repeat(40) },
    })
  ).body.build;
  await http(w.daemon.url, "POST", `/v1/builds/${first.id}/cancel`, { token: w.token });
  // The daemon stops while its file is seeded; the stand-in stays (the integration points at it).
  await w.daemon.stop();
  const { ms } = seedBuilds(join(dataDir, "roost.db"), {
    projectId: w.projectId,
    pipelineIds: w.pipelineIds,
    builds,
    queued: 3,
    snapshot: JSON.stringify(first.config_snapshot),
    now: Math.floor(Date.now() / 1000),
  });
  if (KEEP_DIR) writeFileSync(keptFile, JSON.stringify({ token: w.token, projectId: w.projectId, pipelineIds: w.pipelineIds, seedMs: ms } satisfies Kept));
  const daemon = await startDaemon({ env: ctx.daemonEnv(`lists-${builds}`), dataDir, cleanup: !KEEP_DIR });
  const host = w.host;
  w = { ...w, daemon, stop: async () => (await daemon.stop(), await host.stop()) };
  return { w, seedMs: ms, reused: false };
}

async function wrkOn(w: World, requests: RequestSpec[], connections = LIST_CONNECTIONS, durationMs = LIST_MS): Promise<WrkResult> {
  return runWrk({ origin: w.daemon.url, requests, mode: "cycle", connections, threads: 1, durationMs });
}

/**
 * Every list and filter, the dashboard and /metrics at 10,000 and at LARGE builds, both daemons up
 * at once and each request measured on both in turn (small, large, large, small; the better p50 of
 * each), so the machine's other load falls on both alike; then /readyz while the heaviest list runs
 * at LARGE.
 */
export async function listsAtScale(ctx: BenchContext): Promise<void> {
  const small = await seededWorld(ctx, SMALL);
  const large = await seededWorld(ctx, LARGE);
  for (const [builds, seeded] of [
    [SMALL, small],
    [LARGE, large],
  ] as const)
    say(
      ctx,
      `lists at ${builds.toLocaleString("en-US")} builds: seeded in ${(seeded.seedMs / 1000).toFixed(1)} s by ${SEED_ROUTE} (scripts/bench/seed-builds.ts)${seeded.reused ? `; the file kept under BENCH_SCALE_DATA by an earlier run` : ""}.`,
    );
  try {
    const oldest = Buffer.from("b100").toString("base64url");
    const sets = [small.w, large.w].map((w) => {
      const named = listRequests(w, oldest);
      return [...named, ["the dashboard's six requests", named.filter(([n]) => DASHBOARD.includes(n)).map(([, r]) => r)] as const] as [
        string,
        RequestSpec | RequestSpec[],
      ][];
    });
    // Each request is measured ROUNDS times on each side, alternating; the better p50 and the lower
    // server CPU time per request of each side count. On a shared machine the CPU time (proc(5)
    // utime + stime of the daemon over the run, per answer) is what other processes disturb least;
    // the p50 is what the target names.
    let worst = 0;
    let worstCpu = 0;
    const cpuAtLarge = new Map<string, number>();
    for (let i = 0; i < sets[0]!.length; i++) {
      const name = sets[0]![i]![0];
      const best = [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY];
      const cpu = [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY];
      let errors = 0;
      for (let round = 0; round < ROUNDS; round++) {
        for (const side of round % 2 === 0 ? [0, 1] : [1, 0]) {
          const w = side === 0 ? small.w : large.w;
          const spec = sets[side]![i]![1];
          const requests = Array.isArray(spec) ? spec : [spec];
          for (const r of requests) {
            const probe = await fetch(w.daemon.url + r.path, { headers: r.headers });
            if (probe.status !== 200) throw new Error(`${name}: ${probe.status} ${await probe.text()}`);
            await probe.arrayBuffer();
          }
          const before = ctx.cpuMsOf(w.daemon.process.pid);
          const result = await wrkOn(w, requests);
          cpu[side] = Math.min(cpu[side]!, (ctx.cpuMsOf(w.daemon.process.pid) - before) / Math.max(1, result.requests));
          best[side] = Math.min(best[side]!, result.p50_ms);
          errors += result.errors;
        }
      }
      const scenario = `${name} (wrk, ${LIST_CONNECTIONS} connections)`;
      const baselineName = `the same at ${SMALL.toLocaleString("en-US")} builds`;
      const at = `at ${LARGE.toLocaleString("en-US")} builds`;
      ctx.record({ scenario, metric: `p50 latency ${at}`, roost: best[1]!, baseline: best[0]!, baselineName, higherIsBetter: false, unit: "ms" });
      ctx.record({ scenario, metric: `server CPU time per request ${at}`, roost: cpu[1]!, baseline: cpu[0]!, baselineName, higherIsBetter: false, unit: "ms" });
      console.log(
        `  ${name}: p50 ${best[1]!.toFixed(2)} ms ${at}, ${best[0]!.toFixed(2)} ms at ${SMALL} (${(best[1]! / best[0]!).toFixed(2)}×); CPU per request ${cpu[1]!.toFixed(3)} ms against ${cpu[0]!.toFixed(3)} ms (${(cpu[1]! / cpu[0]!).toFixed(2)}×)`,
      );
      worst = Math.max(worst, best[1]! / best[0]!);
      worstCpu = Math.max(worstCpu, cpu[1]! / cpu[0]!);
      cpuAtLarge.set(name, cpu[1]!);
      if (errors) say(ctx, `${name}: ${errors} requests failed.`);
    }
    ctx.measure("lists worst ratio", worst);
    ctx.measure("lists worst cpu ratio", worstCpu);
    verdict(`every list, the dashboard and /metrics at ${LARGE} builds ≤ 1.5× the same at ${SMALL} (the worst p50)`, worst <= 1.5, `${worst.toFixed(2)}×`);
    verdict(`the same by server CPU time per request (the worst)`, worstCpu <= 1.5, `${worstCpu.toFixed(2)}×`);

    // /readyz while the heaviest list (by CPU time per request at LARGE) is asked over and over by READYZ_LOAD clients.
    const lists = listRequests(large.w, oldest).filter(([n]) => !n.startsWith("dashboard") && n !== "GET /metrics");
    const [name, request] = lists.reduce((a, b) => (cpuAtLarge.get(b[0])! > cpuAtLarge.get(a[0])! ? b : a));
    const readyz = (w: World) => runWrk({ origin: w.daemon.url, requests: [{ path: "/readyz" }], mode: "cycle", connections: 1, threads: 1, durationMs: 4000 });
    const idle = await readyz(large.w);
    const [, loaded] = await Promise.all([wrkOn(large.w, [request], READYZ_LOAD, 5000), readyz(large.w)]);
    ctx.record({
      scenario: `/readyz while the heaviest list (${name}) is asked by ${READYZ_LOAD} clients at once at ${LARGE.toLocaleString("en-US")} builds`,
      metric: "p99 latency",
      roost: loaded.p99_ms,
      baseline: idle.p99_ms,
      baselineName: "/readyz alone",
      higherIsBetter: false,
      unit: "ms",
    });
    ctx.measure("readyz p99 under heaviest list", loaded.p99_ms);
    verdict(`/readyz p99 < 50 ms while ${name} runs at ${LARGE} builds`, loaded.p99_ms < 50, `${loaded.p99_ms.toFixed(1)} ms`);
  } finally {
    await small.w.stop();
    await large.w.stop();
  }
}

/**
 * A database with `queued` builds waiting behind a full pipeline, and its claim: each call queues
 * a build of another pipeline, times claimJob taking it (ms), and finishes it.
 */
async function claimSide(queued: number): Promise<{ claim(i: number): Promise<number>; close(): void }> {
  const { openDatabase, inTransaction } = await import("../../lib/db/client.ts");
  const { migrate } = await import("../../lib/db/migrate.ts");
  const { claimJob, markJob } = await import("../../lib/runners/jobs.ts");
  const { insertRunner } = await import("../../lib/runners/store.ts");
  const { createBuild } = await import("../../lib/builds/create.ts");
  const { transitionBuildIn } = await import("../../lib/builds/transition.ts");
  const { EventBus } = await import("../../lib/daemon/events.ts");
  const dir = mkdtempSync(join(tmpdir(), "roost-bench-claim-"));
  const file = join(dir, "roost.db");
  const now = Math.floor(Date.now() / 1000);
  let db = await openDatabase(`file:${file}`);
  try {
    await migrate(db, () => now);
    await db.execute(
      "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('i', 'git', 'git', '/src/app', '/src/app', 'x', 1, 1)",
    );
    await db.execute(
      "INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, host_url, clone_url, created_at, updated_at) VALUES ('r', 'i', 'git', 'i', 'src/app', 'main', '/src/app', '/src/app', 1, 1)",
    );
    await db.execute("INSERT INTO projects (id, name, repository_id, default_branch, created_at, updated_at) VALUES ('p', 'app', 'r', 'main', 1, 1)");
    const pipeline = (id: string, max: number) =>
      db.execute(
        `INSERT INTO pipelines (id, project_id, name, config_path, max_concurrent, trigger_config, execution_config, created_at, updated_at) VALUES ('${id}', 'p', '${id}', 'roost.yaml', ${max}, '{"events":["push"]}', '{"platforms":["android"]}', 1, 1)`,
      );
    await pipeline("free", 50);
    await pipeline("full", 1);
    const { build: seed } = await createBuild(
      { db, clock: { now: () => now }, events: new EventBus() },
      { pipelineId: "free", branch: "main", commitSha: "a".repeat(40), triggerType: "manual" },
    );
    await inTransaction(db, async (tx) => void (await transitionBuildIn(tx, now, seed.id, "cancel")));
    db.close();
    seedBuilds(file, {
      projectId: "p",
      pipelineIds: ["free", "full"],
      builds: queued + 1,
      queued: queued + 1,
      snapshot: JSON.stringify(seed.config_snapshot),
      now,
    });
    db = await openDatabase(`file:${file}`);
    // The full pipeline's oldest queued build runs: the others wait behind it.
    await inTransaction(db, async (tx) => void (await transitionBuildIn(tx, now, `p-${seed.build_number + 1}`, "start", { runner_id: "elsewhere" })));
    await db.execute("INSERT INTO users (id, email, role, created_at, updated_at) VALUES ('bench', 'bench@example.test', 'owner', 1, 1)");
    const { runner } = await insertRunner(db, { name: "bench", labels: [], createdBy: "bench" }, now);
    const deps = { db, clock: { now: () => now }, events: new EventBus() };
    const opened = db;
    return {
      async claim(i) {
        const { build } = await createBuild(deps, { pipelineId: "free", branch: "main", commitSha: "c".repeat(40), triggerType: "manual" });
        const started = performance.now();
        const claimed = await claimJob(opened, runner, `claim-${i}`, now, 60);
        const took = performance.now() - started;
        if (claimed?.build.id !== build.id) throw new Error(`claim ${i} took ${claimed?.build.id ?? "nothing"}, not ${build.id}`);
        await inTransaction(opened, async (tx) => {
          await markJob(tx, claimed!.job.id, "finished", now);
          await transitionBuildIn(tx, now, claimed!.build.id, "succeed", { exit_code: 0 });
        });
        return took;
      },
      close() {
        opened.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    db.close();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * `claims` claims a side, the two sides alternated claim by claim after WARMUP_CLAIMS each that are
 * not counted, so that the JIT and the machine's load (other processes on two shared cores) fall
 * on both alike; run one side after the other, the ratio moved from 0.8 to 2.0 between runs of
 * the same code here.
 */
async function claimTimes(sides: Array<{ claim(i: number): Promise<number> }>, claims: number): Promise<number[][]> {
  const WARMUP_CLAIMS = 50;
  const times: number[][] = sides.map(() => []);
  for (let i = 0; i < WARMUP_CLAIMS + claims; i++) {
    for (const [s, side] of sides.entries()) {
      const took = await side.claim(i);
      if (i >= WARMUP_CLAIMS) times[s]!.push(took);
    }
  }
  return times;
}

/** A claim with 100,000 builds queued behind a full pipeline against the same with one. */
export async function claimAtScale(ctx: BenchContext): Promise<void> {
  const claims = 300;
  const oneSide = await claimSide(1);
  const manySide = await claimSide(100_000).catch((error) => {
    oneSide.close();
    throw error;
  });
  let one: number[];
  let many: number[];
  try {
    [one, many] = (await claimTimes([oneSide, manySide], claims)) as [number[], number[]];
  } finally {
    oneSide.close();
    manySide.close();
  }
  say(
    ctx,
    `claim: the queues seeded by ${SEED_ROUTE}; each claim is timed around claimJob in-process (bun:sqlite, its write transaction and commit), ${claims} claims a side, the two sides alternated claim by claim after 50 each not counted.`,
  );
  ctx.record({
    scenario: "runner claim, 100,000 builds queued behind a full pipeline (claimJob in-process)",
    metric: "median claim",
    roost: median(many),
    baseline: median(one),
    baselineName: "one build queued behind it",
    higherIsBetter: false,
    unit: "ms",
  });
  ctx.record({
    scenario: "runner claim, 100,000 builds queued behind a full pipeline (claimJob in-process)",
    metric: "p99 claim",
    roost: quantile(many, 0.99),
    baseline: quantile(one, 0.99),
    baselineName: "one build queued behind it",
    higherIsBetter: false,
    unit: "ms",
  });
  ctx.measure("claim 100k ratio", median(many) / median(one));
  verdict(
    "a claim with 100,000 builds queued ≤ 1.5× a claim with one (medians)",
    median(many) / median(one) <= 1.5,
    `${(median(many) / median(one)).toFixed(2)}×`,
  );
}

const ROOST_YAML = pushPipelineFile(
  50,
  "bench",
  `    flutter_version: 3.27.1
    commands:
      build: [flutter analyze, flutter test, flutter build apk --release]
    env:
      FLAVOR: production
`,
);

/** Builds/s of distinct verified pushes for one world under wrk, the daemon's CPU per build, and the file reads the stand-in answered. */
async function pushRate(ctx: BenchContext, w: World, tag: string): Promise<{ rate: number; cpuMs: number; reads: number; builds: number; result: WrkResult }> {
  const requests = ctx.pushDeliveries(SECRET, Math.ceil((ctx.durationMs / 1000) * 6000), tag);
  const count = async () =>
    (await http(w.daemon.url, "GET", `/v1/projects/${w.projectId}/builds?limit=1&include=total`, { token: w.token })).body.total as number;
  const fileReads = () => w.host.requests.filter((r) => r.path.startsWith("/repos/acme/app/contents/")).length;
  const before = await count();
  const readsBefore = fileReads();
  const cpuBefore = ctx.cpuMsOf(w.daemon.process.pid);
  const result = await runWrk({ origin: w.daemon.url, requests, mode: "once", connections: 64, threads: 2, durationMs: ctx.durationMs });
  const cpuMs = ctx.cpuMsOf(w.daemon.process.pid) - cpuBefore;
  const builds = (await count()) - before;
  return { rate: builds / result.seconds, cpuMs: cpuMs / Math.max(1, builds), reads: fileReads() - readsBefore, builds, result };
}

/** Pushes with roost.yaml served, against the same pushes without it: two rounds each, interleaved, the better of each. */
export async function webhookWithFile(ctx: BenchContext): Promise<void> {
  const runs: { round: number; file: boolean; rate: number; cpuMs: number; reads: number; builds: number; result: WrkResult }[] = [];
  // Rounds of one run each way, the order alternating, each round's ratio from two runs next to
  // each other in time: on this shared 2-core machine the same run's rate moved by a quarter from
  // one minute to the next, more than the file's cost (the better of two runs each read 0.80 and
  // 1.00 in two runs of one commit, 2026-11-27); the target's figure is the median round.
  for (const [round, file] of [
    [0, false],
    [0, true],
    [1, true],
    [1, false],
    [2, false],
    [2, true],
  ] as const) {
    const w = await world(
      ctx,
      file ? "webhook-file" : "webhook-no-file",
      file ? { file: ROOST_YAML } : { pipelines: [{ name: "bench", trigger_config: { branches: ["**"] }, concurrency: { max_concurrent: 50 } }] },
    );
    runs.push({ round, file, ...(await pushRate(ctx, w, `${file ? "f" : "n"}${round}`).finally(() => w.stop())) });
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const side = (file: boolean) => runs.filter((r) => r.file === file);
  const ratios = [0, 1, 2].map((round) => {
    const [n, f] = [false, true].map((file) => runs.find((r) => r.round === round && r.file === file)!);
    return f!.rate / n!.rate;
  });
  const middle = (file: boolean) => ({ rate: median(side(file).map((r) => r.rate)), cpuMs: median(side(file).map((r) => r.cpuMs)) });
  const [a, b] = [middle(false), middle(true)];
  say(
    ctx,
    `webhook-file: each push is one commit to one of ${PUSH_BRANCHES} branches, its \`before\` the branch's previous push, listed with the paths it modified (lib/main.dart; roost.yaml in one push of ${PIPELINE_FILE_EDIT_EVERY}), as GitHub sends them; a push that leaves the file alone is built from the file kept for its \`before\`, so the stand-in is asked for the file (or its absence) at a branch's first push and at each edit.`,
  );
  say(
    ctx,
    `webhook-file: builds/s with roost.yaml over without, by round: ${ratios.map((r) => r.toFixed(3)).join(", ")}; median ${median(ratios).toFixed(3)} (the target's figure).`,
  );
  for (const r of runs)
    say(
      ctx,
      `webhook-file: round ${r.round + 1}, ${r.file ? "with" : "without"} roost.yaml: ${r.builds.toLocaleString("en-US")} builds at ${r.rate.toFixed(0)}/s, ${r.reads.toLocaleString("en-US")} file reads from the stand-in, daemon CPU ${r.cpuMs.toFixed(2)} ms a build.`,
    );
  const scenario = "POST /v1/webhooks/github, distinct verified pushes (wrk, 64 connections; the median of three runs each)";
  ctx.record({
    scenario,
    metric: "builds committed/s with roost.yaml served by the stand-in",
    roost: b.rate,
    baseline: a.rate,
    baselineName: "the same pushes, no roost.yaml (the API's pipeline)",
    higherIsBetter: true,
    unit: "/s",
  });
  ctx.record({
    scenario,
    metric: "daemon CPU (user + system) per build, with roost.yaml served",
    roost: b.cpuMs,
    baseline: a.cpuMs,
    baselineName: "the same pushes, no roost.yaml",
    higherIsBetter: false,
    unit: "ms",
  });
  ctx.measure("webhook file ratio", median(ratios));
  for (const r of runs) if (r.result.errors) ctx.note(`pushes ${r.file ? "with" : "without"} the file: ${r.result.errors} of ${r.result.requests} failed.`);
}

/** A burst of 2,000 pushes: when each build's status reached the stand-in, and how often. */
export async function statusBurst(ctx: BenchContext): Promise<void> {
  const w = await world(ctx, "statuses", { pipelines: [{ name: "bench", trigger_config: { branches: ["**"] }, concurrency: { max_concurrent: 50 } }] });
  try {
    const pushes = ctx.pushDeliveries(SECRET, 2000, "c");
    const answered = new Map<string, number>();
    const started = Date.now();
    const cpuBefore = ctx.cpuMsOf(w.daemon.process.pid);
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        for (let i = next++; i < pushes.length; i = next++) {
          const p = pushes[i]!;
          const res = await fetch(w.daemon.url + p.path, { method: "POST", headers: p.headers, body: p.body });
          const sha = (JSON.parse(p.body!) as { after: string }).after;
          if (res.status === 200) answered.set(sha, Date.now());
          await res.arrayBuffer();
        }
      }),
    );
    const burstMs = Date.now() - started;
    const statuses = () => w.host.requests.filter((r) => r.method === "POST" && r.path.includes("/statuses/"));
    const deadline = Date.now() + 30_000;
    while (statuses().length < answered.size && Date.now() < deadline) await Bun.sleep(50);
    const cpuMs = ctx.cpuMsOf(w.daemon.process.pid) - cpuBefore;
    const bySha = new Map<string, number[]>();
    for (const r of statuses()) {
      const sha = r.path.split("/statuses/")[1]!;
      bySha.set(sha, [...(bySha.get(sha) ?? []), r.at]);
    }
    const delays = [...answered].map(([sha, at]) => (bySha.get(sha)?.[0] ?? Number.POSITIVE_INFINITY) - at);
    const twice = [...bySha.values()].filter((ats) => ats.length > 1).length;
    const missing = delays.filter((d) => !Number.isFinite(d)).length;
    const scenario = `commit statuses after a burst of ${answered.size.toLocaleString("en-US")} pushes (sent in ${(burstMs / 1000).toFixed(1)} s, 64 at a time)`;
    ctx.record({
      scenario,
      metric: "longest push answered → its status at the host",
      roost: Math.max(...delays),
      baseline: 10_000,
      baselineName: "target",
      higherIsBetter: false,
      unit: "ms",
    });
    ctx.record({
      scenario,
      metric: "median push answered → its status at the host",
      roost: median(delays),
      baseline: 10_000,
      baselineName: "target",
      higherIsBetter: false,
      unit: "ms",
    });
    const duringBurst = statuses().filter((r) => r.at <= started + burstMs).length;
    say(
      ctx,
      `statuses: ${duringBurst.toLocaleString("en-US")} of ${statuses().length.toLocaleString("en-US")} posted while the pushes were arriving; the daemon used ${(cpuMs / 1000).toFixed(1)} s of CPU (user + system) from the first push to the last status, ${(cpuMs / Math.max(1, answered.size)).toFixed(2)} ms a push with its status.`,
    );
    ctx.measure("statuses burst max ms", Math.max(...delays));
    ctx.measure("statuses posted twice", twice + missing);
    if (twice || missing) ctx.note(`statuses: ${twice} builds' statuses posted more than once, ${missing} not posted within 30 s.`);
  } finally {
    await w.stop();
  }
}
