// A bigger fleet must get more jobs done (issue 20): claim → finish by 20 runners and by 100
// runners against one daemon on its local file, and the same client against a bare Bun.serve that
// answers every request with a fixed claim, with 100 and with 20 runners (what this client and
// machine can do at most, and how much more a bigger fleet gets from a server that does nothing). Each
// runner, in a loop until the time is up: claims a queued build (wait_seconds 0), then finishes
// it. The builds are queued before the clock starts, more than the runners can finish.
//
// Those jobs take no time, so both fleets keep the daemon (and, with the client on the same two
// cores, the machine) saturated: the 100/20 ratio then shows the CPU, not whether claims scale. A
// second pair of runs holds each job for JOB_MS between claim and finish, as a real job runs
// before it finishes: a daemon that serializes or slows its claims as the fleet grows (the claim
// scan this bench was written against took 478 ms at 100 runners) cannot give 100 runners five
// times the jobs of 20; one whose claims stay cheap can, until its CPU is full.
// `npm run bench -- fleet` records the rows (scripts/bench.ts).
import { http, startDaemon } from "../../tests/helpers/daemon.ts";
import { bareServer, ciFixture, owner } from "../bench.ts";
import type { BenchRow } from "./row.ts";

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 5_000);
/** Builds queued before each run's clock starts. */
const QUEUED = Number(process.env.BENCH_FLEET_BUILDS ?? 6_000);
/** How long each job of the second pair of runs holds its runner between claim and finish. */
const JOB_MS = Number(process.env.BENCH_FLEET_JOB_MS ?? 200);
const SECRET = "bench-webhook-secret-0123";

export interface Runner {
  url: string;
  id: string;
  token: string;
}

/** `n` builds of the fixture's pipeline queued through the daemons at `urls` in turn, 50 requests at a time. */
export async function queueBuilds(urls: string[], token: string, ci: { projectId: string; pipelineId: string }, n: number): Promise<void> {
  for (let i = 0; i < n; i += 50) {
    const made = await Promise.all(
      Array.from({ length: Math.min(50, n - i) }, (_, k) =>
        http(urls[(i + k) % urls.length]!, "POST", `/v1/projects/${ci.projectId}/builds`, {
          token,
          body: { pipeline_id: ci.pipelineId, commit_sha: "c".repeat(40) },
        }),
      ),
    );
    const refused = made.find((r) => r.status !== 201);
    if (refused) throw new Error(`queueing a build answered ${refused.status} ${JSON.stringify(refused.body)}`);
  }
}

/** `n` runners registered on the first daemon and connected, runner i to daemon i mod the number of daemons (as a load balancer spreads them). */
export async function connectRunners(urls: string[], token: string, n: number): Promise<Runner[]> {
  return Promise.all(
    Array.from({ length: n }, async (_, i): Promise<Runner> => {
      const url = urls[i % urls.length]!;
      const made = (await http(urls[0]!, "POST", "/v1/runners", { token, body: { name: `bench-${i}` } })).body;
      const runner = { url, id: made.runner.id as string, token: made.token as string };
      await http(url, "POST", `/v1/runners/${runner.id}/connect`, { token: runner.token, body: { capabilities: { os: "linux", arch: "x64" } } });
      return runner;
    }),
  );
}

/** Jobs claimed and finished per second by `runners`, each looping claim → (`jobMs` of work) → finish until the deadline. */
export async function claimFinishRate(
  runners: Runner[],
  bare: boolean,
  durationMs = DURATION_MS,
  jobMs = 0,
): Promise<{ rate: number; done: number; errors: number; drained: boolean }> {
  let done = 0;
  let errors = 0;
  let drained = false;
  const began = performance.now();
  const deadline = began + durationMs;
  await Promise.all(
    runners.map(async (runner) => {
      const call = (path: string, body: unknown) => http(runner.url, "POST", `/v1/runners/${runner.id}${path}`, { token: runner.token, body });
      while (performance.now() < deadline) {
        const claim = await call("/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 });
        if (claim.status === 204) return void (drained = true);
        if (claim.status !== (bare ? 200 : 201)) {
          errors++;
          continue;
        }
        if (jobMs > 0) await Bun.sleep(jobMs);
        const finished = await call(`/jobs/${claim.body.job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 });
        if (finished.status === 200) done++;
        else errors++;
      }
    }),
  );
  return { rate: done / ((performance.now() - began) / 1000), done, errors, drained };
}

/** One daemon on a fresh local file with QUEUED builds waiting, and `n` connected runners whose jobs take `jobMs`. */
async function daemonRun(n: number, jobMs = 0): Promise<{ rate: number; errors: number; drained: boolean }> {
  const daemon = await startDaemon({ env: { ROOST_LOG_LEVEL: "warn" } });
  const token = await owner(daemon);
  const ci = await ciFixture(daemon, token, SECRET);
  try {
    await http(daemon.url, "PATCH", `/v1/pipelines/${ci.pipelineId}`, { token, body: { concurrency: { max_concurrent: 1000 } } });
    await queueBuilds([daemon.url], token, ci, QUEUED);
    return await claimFinishRate(await connectRunners([daemon.url], token, n), false, DURATION_MS, jobMs);
  } finally {
    await ci.stop();
    await daemon.stop();
  }
}

/** The same client against a bare Bun.serve answering a fixed claim to every request. */
async function bareRun(n: number): Promise<number> {
  const bare = await bareServer(JSON.stringify({ job: { job_id: "bare-job" } }));
  try {
    const runners = Array.from({ length: n }, (_, i) => ({ url: bare.url, id: `runner-${i}`, token: "bare" }));
    return (await claimFinishRate(runners, true)).rate;
  } finally {
    await bare.stop();
  }
}

/** The rows of `npm run bench -- fleet` and the two target ratios. */
export async function fleetRows(notes: string[]): Promise<{ rows: BenchRow[]; ratios: Record<string, number> }> {
  const twenty = await daemonRun(20);
  const hundred = await daemonRun(100);
  const bare100 = await bareRun(100);
  // What the client and this machine give at most for a bigger fleet: a server that does no work
  // per job scales 20 → 100 runners by this much, which bounds the 100/20 ratio of any daemon
  // sharing the same CPUs with the client.
  const bare20 = await bareRun(20);
  const working20 = await daemonRun(20, JOB_MS);
  const working100 = await daemonRun(100, JOB_MS);
  const scenario = `runner fleet, claim → finish on one daemon (local file), ${QUEUED} builds queued`;
  const rows: BenchRow[] = [
    {
      scenario,
      metric: "jobs/s, 100 runners",
      roost: hundred.rate,
      baseline: twenty.rate,
      baselineName: "the same with 20 runners",
      higherIsBetter: true,
      unit: "/s",
    },
    {
      scenario,
      metric: "jobs/s, 100 runners",
      roost: hundred.rate,
      baseline: bare100,
      baselineName: "bare Bun.serve answering a fixed claim, same client, 100 runners",
      higherIsBetter: true,
      unit: "/s",
    },
    {
      scenario,
      metric: "jobs/s, 100 runners (bare Bun.serve)",
      roost: bare100,
      baseline: bare20,
      baselineName: "bare Bun.serve with 20 runners, same client",
      higherIsBetter: true,
      unit: "/s",
    },
    {
      scenario: `${scenario}, each job ${JOB_MS} ms long`,
      metric: "jobs/s, 100 runners",
      roost: working100.rate,
      baseline: working20.rate,
      baselineName: `the same with 20 runners (at most ${(20_000 / JOB_MS).toFixed(0)}/s)`,
      higherIsBetter: true,
      unit: "/s",
    },
  ];
  for (const [name, f] of [
    ["20 runners", twenty],
    ["100 runners", hundred],
    [`20 runners, ${JOB_MS} ms jobs`, working20],
    [`100 runners, ${JOB_MS} ms jobs`, working100],
  ] as const) {
    if (f.errors) notes.push(`fleet bench, ${name}: ${f.errors} runner requests failed.`);
    if (f.drained) notes.push(`fleet bench, ${name}: the runners finished all ${QUEUED} queued builds before the time was up; raise BENCH_FLEET_BUILDS.`);
  }
  return {
    rows,
    ratios: {
      "fleet 100/20 ratio": hundred.rate / twenty.rate,
      "fleet bare ratio": hundred.rate / bare100,
      "fleet working 100/20 ratio": working100.rate / working20.rate,
    },
  };
}
