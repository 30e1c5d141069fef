// `bun scripts/bench/fleet-ab.ts <checkout> <checkout>... [--rounds 3] [--seconds 3] [--runners 100] [--builds 2000] [--prof <dir>]`:
// the fleet bench's claim → finish loop (scripts/bench/fleet.ts) against `roost serve` from several
// checkouts (copies of the commits to compare), alternated round by round so that the load of a
// shared machine falls on each alike. Prints, per round and checkout, jobs/s and the daemon's CPU
// time per claim + finish (user + system from /proc, the figure the other processes disturb least).
// --prof runs each daemon under `bun --cpu-prof` and prints the rounds' windows for
// scripts/bench/profile-top.ts.
import { rmSync } from "node:fs";
import { basename, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startCheckout } from "./checkout-daemon.ts";
import { http, type Daemon } from "../../tests/helpers/daemon.ts";
import { ciFixture, cpuMsOf, owner } from "../bench.ts";
import { claimFinishRate, connectRunners, queueBuilds } from "./fleet.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: "string", default: "3" },
    seconds: { type: "string", default: "3" },
    runners: { type: "string", default: "100" },
    builds: { type: "string", default: "2000" },
    prof: { type: "string" },
  },
});
if (positionals.length === 0) throw new Error("name at least one checkout");

function start(checkout: string, i: number) {
  const prof: Record<string, string> = values.prof
    ? { BUN_OPTIONS: `--cpu-prof --cpu-prof-dir=${resolve(values.prof)} --cpu-prof-name=fleet-${i}-${basename(checkout)}.cpuprofile` }
    : {};
  return startCheckout(checkout, prof);
}

const SECRET = "bench-webhook-secret-0123";
const daemons = await Promise.all(positionals.map((p, i) => start(resolve(p), i)));
const stops: (() => Promise<void>)[] = [];
try {
  const set = await Promise.all(
    daemons.map(async (d) => {
      const token = await owner({ url: d.url } as Daemon);
      const ci = await ciFixture({ url: d.url } as Daemon, token, SECRET);
      stops.push(ci.stop);
      await http(d.url, "PATCH", `/v1/pipelines/${ci.pipelineId}`, { token, body: { concurrency: { max_concurrent: 1000 } } });
      return { ...d, token, ci, runners: await connectRunners([d.url], token, Number(values.runners)) };
    }),
  );
  for (let round = 0; round < Number(values.rounds); round++) {
    const line: string[] = [];
    for (const d of set) {
      await queueBuilds([d.url], d.token, d.ci, Number(values.builds));
      const before = cpuMsOf(d.child.pid);
      const from = Date.now();
      const { rate, done, errors, drained } = await claimFinishRate(d.runners, false, Number(values.seconds) * 1000);
      const cpu = ((cpuMsOf(d.child.pid) - before) * 1000) / done;
      line.push(
        `${basename(d.name)}: ${Math.round(rate)} jobs/s, ${cpu.toFixed(0)} µs CPU/job${errors ? `, ${errors} errors` : ""}${drained ? ", drained" : ""}${values.prof ? ` [${from}-${Date.now()}]` : ""}`,
      );
    }
    console.log(line.join("  |  "));
  }
} finally {
  for (const stop of stops) await stop();
  for (const d of daemons) {
    d.child.kill();
    await d.child.exited;
    rmSync(d.dataDir, { recursive: true, force: true });
  }
}
