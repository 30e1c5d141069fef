// Three daemons on one libSQL server against one daemon on its local file, under the same load
// of 100 runners (docs/operations.md "Several hosts"). On the cluster a runner talks to one daemon
// (runner i to daemon i mod 3, as a load balancer spreads connections), and so do the webhook
// pushes; the daemons reach sqld over loopback by WebSocket (`libsql://…?tls=0`). Two loads:
//   - The team's day (the target): pushes arrive at 25 a second, each a build; 100 runners claim
//     with a long poll, run each job for 1 to 5 seconds while streaming 50 lines a second (25
//     every 500 ms, as runner/shipper.ts flushes) and heartbeating every 2 seconds on a 6-second
//     lease (a stricter lease than the default 45 s, so that a late heartbeat shows), and finish
//     it. Figures: builds finished in the window (the cluster's as a ratio of the file's), log
//     append p50/p99, heartbeat p99, jobs declared lost while their runner heartbeat.
//   - Saturation (for the record): the builds are queued before the clock starts and each runner
//     loops claim, APPENDS appends of LINES_PER_APPEND lines, heartbeat and finish with no pause,
//     so it shows how many builds a second either setup can finish at most on this machine.
// `npm run bench -- cluster` records the rows (scripts/bench.ts); `bun run scripts/bench/cluster.ts` prints them.
import { http, startDaemon, type Daemon } from "../../tests/helpers/daemon.ts";
import { startSqld, type Sqld } from "../../tests/support/sqld.ts";
import { ciFixture, LINE, owner } from "../bench.ts";
import { connectRunners, queueBuilds, type Runner } from "./fleet.ts";
import { signedPush } from "./github.ts";
import { printRows, type BenchRow } from "./row.ts";

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 10_000);
const RUNNERS = 100;
const APPENDS = 4;
const LINES_PER_APPEND = 25;
/** Builds queued before the clock starts: more than the runners can finish in DURATION_MS here. */
const QUEUED = Number(process.env.BENCH_CLUSTER_BUILDS ?? 3000);
const SECRET = "bench-webhook-secret-0123";
/** Daemons on sqld (BENCH_CLUSTER_DAEMONS=1 measures one daemon on sqld under the same load). */
const DAEMONS = Number(process.env.BENCH_CLUSTER_DAEMONS ?? 3);

/** The team's day: its length, pushes a second, job length, lines a second, heartbeat and lease. */
const DAY_MS = Number(process.env.BENCH_CLUSTER_DAY_MS ?? 30_000);
const PUSHES_PER_SECOND = 25;
const JOB_MS = { min: 1_000, max: 5_000 };
const FLUSH_MS = 500;
const LINES_PER_SECOND = 50;
const HEARTBEAT_SECONDS = 2;
const LEASE_SECONDS = 6;

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

interface Setting {
  urls: string[];
  token: string;
  ci: { projectId: string; pipelineId: string };
}

/** The setup's daemons (and sqld) with an owner, a GitHub project and a pipeline of up to 1000 builds at once, for `use`. */
async function withSetup<T>(setup: Setup, env: Record<string, string>, use: (setting: Setting) => Promise<T>): Promise<T> {
  const sqld: Sqld | undefined = setup === "one daemon on its local file" ? undefined : await startSqld();
  const daemons: Daemon[] = [];
  let stopFixture = async () => {};
  try {
    env = {
      ...env,
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
    return await use({ urls: daemons.map((d) => d.url), token, ci });
  } finally {
    await stopFixture();
    await Promise.all(daemons.map((d) => d.stop()));
    await sqld?.stop();
  }
}

/** Saturation: builds queued first, then every runner loops claim → appends → heartbeat → finish with no pause. */
function saturated(setup: Setup): Promise<ClusterFigures> {
  return withSetup(setup, {}, async ({ urls, token, ci }) => {
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
    return { builds, seconds, p50: at(latencies, 0.5), p99: at(latencies, 0.99), claimP50: at(claims, 0.5), finishP50: at(finishes, 0.5), errors, drained };
  });
}

const at = (list: number[], q: number) => list.sort((x, y) => x - y)[Math.min(list.length - 1, Math.floor(q * list.length))] ?? 0;

export interface DayFigures {
  pushes: number;
  builds: number;
  seconds: number;
  appendP50: number;
  appendP99: number;
  heartbeatP99: number;
  pushP99: number;
  /** Jobs the daemons declared lost (not renewed by a heartbeat, or their finish refused) while their runner heartbeat. */
  lost: number;
  errors: number;
}

/**
 * The team's day: pushes at PUSHES_PER_SECOND spread over the daemons, and RUNNERS runners that
 * long-poll for jobs, run each for a length drawn from JOB_MS (the same sequence on both setups),
 * streaming LINES_PER_SECOND and heartbeating every HEARTBEAT_SECONDS, then finish it. Builds
 * finished before the end of the day count.
 */
function day(setup: Setup): Promise<DayFigures> {
  const env = { ROOST_RUNNER_HEARTBEAT_SECONDS: String(HEARTBEAT_SECONDS), ROOST_RUNNER_LEASE_SECONDS: String(LEASE_SECONDS) };
  return withSetup(setup, env, async ({ urls, token }) => {
    const runners = await connectRunners(urls, token, RUNNERS);
    const appends: number[] = [];
    const heartbeats: number[] = [];
    const pushTimes: number[] = [];
    let pushes = 0;
    let builds = 0;
    let lost = 0;
    let errors = 0;
    const began = performance.now();
    const end = began + DAY_MS;
    const timed = async <T>(into: number[], work: () => Promise<T>): Promise<T> => {
      const sent = performance.now();
      try {
        return await work();
      } finally {
        into.push(performance.now() - sent);
      }
    };

    // Pushes on a fixed schedule, whatever the answers' latency: one every 1000 / PUSHES_PER_SECOND ms.
    const pushing = (async () => {
      const sent: Promise<void>[] = [];
      for (let i = 0; ; i++) {
        const due = began + (i * 1000) / PUSHES_PER_SECOND;
        if (due >= end) break;
        const wait = due - performance.now();
        if (wait > 0) await Bun.sleep(wait);
        // Each push is a new branch, so that no build supersedes another and every push is one build.
        const { body, signature } = signedPush(SECRET, {
          branch: 1000 + i,
          before: "0".repeat(40),
          sha: Bun.SHA1.hash(`day-${i}`, "hex"),
          message: `commit ${i}`,
          modified: ["lib/main.dart"],
        });
        const url = urls[i % urls.length]!;
        sent.push(
          timed(pushTimes, () =>
            fetch(`${url}/v1/webhooks/github`, {
              method: "POST",
              headers: {
                "content-type": "application/json",
                "x-github-event": "push",
                "x-github-delivery": crypto.randomUUID(),
                "x-hub-signature-256": signature,
              },
              body,
            }),
          ).then(
            (res) => {
              void res.arrayBuffer();
              if (res.status === 202 || res.status === 200 || res.status === 201) pushes++;
              else errors++;
            },
            () => void errors++,
          ),
        );
      }
      await Promise.all(sent);
    })();

    const work = async (runner: Runner, index: number) => {
      const call = (path: string, body: unknown) => http(runner.url, "POST", `/v1/runners/${runner.id}${path}`, { token: runner.token, body });
      // Job lengths from a fixed sequence per runner (a linear congruential generator), the same on both setups.
      let seed = index + 1;
      const nextLength = () => {
        seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
        return JOB_MS.min + (seed % (JOB_MS.max - JOB_MS.min + 1));
      };
      while (performance.now() < end) {
        const wait = Math.max(0, Math.min(5, Math.floor((end - performance.now()) / 1000)));
        const claim = await call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: wait });
        if (claim.status === 204) continue;
        if (claim.status !== 201) {
          errors++;
          await Bun.sleep(200);
          continue;
        }
        const jobId = claim.body.job.job_id as string;
        const jobEnds = performance.now() + nextLength();
        let running = true;
        let wasLost = false;
        const beating = (async () => {
          while (running) {
            await Bun.sleep(HEARTBEAT_SECONDS * 1000);
            if (!running) break;
            const beat = await timed(heartbeats, () => call("/heartbeat", { job_ids: [jobId] }));
            if (beat.status !== 200) errors++;
            else if (!beat.body.renewed.includes(jobId)) wasLost = true;
          }
        })();
        let next = 0;
        while (performance.now() < jobEnds) {
          await Bun.sleep(Math.min(FLUSH_MS, Math.max(0, jobEnds - performance.now())));
          const count = (LINES_PER_SECOND * FLUSH_MS) / 1000;
          const res = await timed(appends, () =>
            call(`/jobs/${jobId}/logs`, { first_line: next, lines: Array.from({ length: count }, (_, n) => ({ step: "build", text: `${LINE} ${next + n}` })) }),
          );
          if (res.status === 202) next = res.body.next_line as number;
          else if (res.status === 410) wasLost = true;
          else errors++;
        }
        running = false;
        await beating;
        const finished = await call(`/jobs/${jobId}/finish`, { status: "succeeded", exit_code: 0, line_count: next });
        if (finished.status === 200 && performance.now() <= end) builds++;
        else if (finished.status === 410) wasLost = true;
        else if (finished.status !== 200) errors++;
        if (wasLost) lost++;
      }
    };
    await Promise.all([pushing, ...runners.map(work)]);
    return {
      pushes,
      builds,
      seconds: DAY_MS / 1000,
      appendP50: at(appends, 0.5),
      appendP99: at(appends, 0.99),
      heartbeatP99: at(heartbeats, 0.99),
      pushP99: at(pushTimes, 0.99),
      lost,
      errors,
    };
  });
}

/** The rows `npm run bench -- cluster` records, and the target ratios (the team's day's). */
export async function clusterRows(notes: string[]): Promise<{ rows: BenchRow[]; ratios: Record<string, number> }> {
  const CLUSTER = "three daemons on one sqld (WebSocket)";
  const baselineName = "one daemon on its local file";
  const fileDay = await day("one daemon on its local file");
  const clusterDay = await day(CLUSTER);
  const dayScenario = `the team's day: ${PUSHES_PER_SECOND} pushes/s, ${RUNNERS} runners, jobs of ${JOB_MS.min / 1000}–${JOB_MS.max / 1000} s at ${LINES_PER_SECOND} lines/s, heartbeat ${HEARTBEAT_SECONDS} s on a ${LEASE_SECONDS} s lease, ${DAY_MS / 1000} s; ${DAEMONS} daemon(s) on one sqld over loopback`;
  const rows: BenchRow[] = [
    { scenario: dayScenario, metric: "builds finished", roost: clusterDay.builds, baseline: fileDay.builds, baselineName, higherIsBetter: true, unit: "" },
    { scenario: dayScenario, metric: "pushes accepted", roost: clusterDay.pushes, baseline: fileDay.pushes, baselineName, higherIsBetter: true, unit: "" },
    {
      scenario: dayScenario,
      metric: "log append p50",
      roost: clusterDay.appendP50,
      baseline: fileDay.appendP50,
      baselineName,
      higherIsBetter: false,
      unit: "ms",
    },
    {
      scenario: dayScenario,
      metric: "log append p99",
      roost: clusterDay.appendP99,
      baseline: fileDay.appendP99,
      baselineName,
      higherIsBetter: false,
      unit: "ms",
    },
    {
      scenario: dayScenario,
      metric: "heartbeat p99",
      roost: clusterDay.heartbeatP99,
      baseline: fileDay.heartbeatP99,
      baselineName,
      higherIsBetter: false,
      unit: "ms",
    },
    { scenario: dayScenario, metric: "push p99", roost: clusterDay.pushP99, baseline: fileDay.pushP99, baselineName, higherIsBetter: false, unit: "ms" },
  ];
  for (const [name, f] of [
    ["three daemons on sqld", clusterDay],
    ["one daemon on its file", fileDay],
  ] as const) {
    if (f.errors) notes.push(`cluster bench, the team's day, ${name}: ${f.errors} requests failed.`);
    if (f.lost) notes.push(`cluster bench, the team's day, ${name}: ${f.lost} jobs were declared lost while their runner heartbeat.`);
  }

  const file = await saturated("one daemon on its local file");
  const cluster = await saturated(CLUSTER);
  const scenario = `saturation: ${QUEUED} builds queued, ${RUNNERS} runners (claim, ${APPENDS} appends of ${LINES_PER_APPEND} lines, heartbeat, finish, no pause), ${DAEMONS} daemon(s) on one sqld over loopback`;
  rows.push(
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
  );
  for (const [name, f] of [
    ["three daemons on sqld", cluster],
    ["one daemon on its file", file],
  ] as const) {
    if (f.errors) notes.push(`cluster bench, saturation, ${name}: ${f.errors} runner requests failed.`);
    if (f.drained)
      notes.push(`cluster bench, saturation, ${name}: the runners finished all ${QUEUED} queued builds before the time was up; raise BENCH_CLUSTER_BUILDS.`);
  }
  return {
    rows,
    ratios: {
      "cluster builds ratio": clusterDay.builds / fileDay.builds,
      "cluster append p99 ms": clusterDay.appendP99,
      "cluster lost jobs": clusterDay.lost,
    },
  };
}

if (import.meta.main) {
  const notes: string[] = [];
  const { rows, ratios } = await clusterRows(notes);
  printRows(rows, ratios, notes);
}
