// `bun scripts/bench/fleet-ab.ts <checkout> <checkout>... [--rounds 3] [--seconds 3] [--runners 100] [--builds 2000] [--prof <dir>]`:
// the fleet bench's claim → finish loop (scripts/bench/fleet.ts) against `roost serve` from several
// checkouts (copies of the commits to compare), alternated round by round so that the load of a
// shared machine falls on each alike. Prints, per round and checkout, jobs/s and the daemon's CPU
// time per claim + finish (user + system from /proc, the figure the other processes disturb least).
// --prof runs each daemon under `bun --cpu-prof` and prints the rounds' windows for
// scripts/bench/profile-top.ts.
import { basename } from "node:path";
import { parseArgs } from "node:util";
import { withCheckoutsAndCi } from "./checkout-daemon.ts";
import { http } from "../../tests/helpers/daemon.ts";
import { cpuMsOf } from "../bench.ts";
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

await withCheckoutsAndCi(positionals, { scenario: "fleet", secret: "bench-webhook-secret-0123", profDir: values.prof }, async (checkouts) => {
  const set = await Promise.all(
    checkouts.map(async (d) => {
      await http(d.url, "PATCH", `/v1/pipelines/${d.ci.pipelineId}`, { token: d.token, body: { concurrency: { max_concurrent: 1000 } } });
      return { ...d, runners: await connectRunners([d.url], d.token, Number(values.runners)) };
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
});
