// `bun scripts/bench/webhook-ab.ts <checkout> <checkout>... [--rounds 4] [--seconds 4] [--api] [--sqld] [--prof <dir>]`:
// the webhooks scenario of scripts/bench.ts (distinct signed GitHub pushes, each a build, from wrk
// with 64 connections) against `roost serve` from several checkouts (copies of the commits to
// compare), alternated round by round (every other round in the other order) so that the load of
// a shared machine falls on each alike.
// Prints, per round and checkout, builds/s and the daemon's CPU time per build (user + system from
// /proc, the figure the other processes disturb least). --api sends POST /v1/projects/{id}/builds
// instead (the builds scenario); --prof runs each daemon under `bun --cpu-prof` and prints the
// rounds' windows for scripts/bench/profile-top.ts. --sqld puts each daemon on a libSQL server of
// its own (sqld over loopback, Hrana over HTTP, as scripts/bench/sqld.ts) and splits the CPU per
// build between the daemon and sqld.
import { basename } from "node:path";
import { parseArgs } from "node:util";
import { withCheckoutsAndCi } from "./checkout-daemon.ts";
import { pushDeliveries } from "./github.ts";
import { runWrk, type RequestSpec } from "./wrk.ts";
import type { Daemon } from "../../tests/helpers/daemon.ts";
import { startSqld, type Sqld } from "../../tests/support/sqld.ts";
import { buildCounter, cpuMsOf } from "../bench.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: "string", default: "4" },
    seconds: { type: "string", default: "4" },
    api: { type: "boolean", default: false },
    prof: { type: "string" },
    sqld: { type: "boolean", default: false },
  },
});
if (positionals.length === 0) throw new Error("name at least one checkout");

const SECRET = "bench-webhook-secret-0123";
const seconds = Number(values.seconds);
const servers: Sqld[] = values.sqld ? await Promise.all(positionals.map(() => startSqld())) : [];
const env = servers.map((s) => ({ ROOST_DATABASE_URL: s.url }));
await withCheckoutsAndCi(positionals, { scenario: "webhooks", secret: SECRET, profDir: values.prof, env }, async (checkouts) => {
  const set = checkouts.map((d, i) => ({ ...d, sqld: servers[i], count: buildCounter({ url: d.url } as Daemon, d.token, d.ci.projectId) }));
  const perBuildCpu = new Map<string, number[]>();
  for (let round = 0; round < Number(values.rounds); round++) {
    const line: string[] = [];
    // Every other round in the other order: the first of a round met another machine than the second.
    for (const d of round % 2 ? [...set].reverse() : set) {
      // Fresh deliveries every round (a repeat would measure the dedupe answer), a few more than the round can send.
      const requests: RequestSpec[] = values.api
        ? [
            {
              method: "POST",
              path: `/v1/projects/${d.ci.projectId}/builds`,
              headers: { authorization: `Bearer ${d.token}`, "content-type": "application/json" },
              body: JSON.stringify({ pipeline_id: d.ci.pipelineId, commit_sha: "c".repeat(40) }),
            },
          ]
        : pushDeliveries(SECRET, seconds * 4_000, `${round}`);
      const builds = await d.count();
      const before = cpuMsOf(d.child.pid);
      const sqldBefore = d.sqld ? cpuMsOf(d.sqld.process.pid) : 0;
      const from = Date.now();
      const out = await runWrk({ origin: d.url, requests, mode: values.api ? "cycle" : "once", connections: 64, threads: 2, durationMs: seconds * 1000 });
      const cpu = cpuMsOf(d.child.pid) - before;
      const sqldCpu = d.sqld ? cpuMsOf(d.sqld.process.pid) - sqldBefore : 0;
      const made = (await d.count()) - builds;
      const perBuild = (ms: number) => ((ms * 1000) / made).toFixed(0);
      perBuildCpu.set(basename(d.name), [...(perBuildCpu.get(basename(d.name)) ?? []), (cpu * 1000) / made]);
      line.push(
        `${basename(d.name)}: ${Math.round(made / out.seconds)} builds/s, ${perBuild(cpu)} µs CPU/build${d.sqld ? ` + sqld ${perBuild(sqldCpu)}` : ""}${out.errors ? `, ${out.errors} errors` : ""}${values.prof ? ` [${from}-${Date.now()}]` : ""}`,
      );
    }
    console.log(line.join("  |  "));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  console.log([...perBuildCpu].map(([name, xs]) => `${name}: median ${median(xs).toFixed(0)} µs CPU/build`).join("  |  "));
});
for (const s of servers) await s.stop();
