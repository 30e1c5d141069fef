// `bun scripts/bench/sqld-append-ab.ts <checkout>[@http|@ws|@file]... [--rounds 4] [--seconds 4] [--ws] [--file]`:
// the log-append load of `npm run bench -- sqld` (20 runners, 25-line appends) against `roost
// serve` from several checkouts (git worktrees of the commits to compare), each daemon on a sqld of
// its own over loopback (Hrana over HTTP; --ws: over WebSocket; --file: the daemon's own file, no
// sqld; or per checkout, `@ws`, `@file`, so one run compares a commit on sqld with itself on its
// file), their runs alternated round by round so that the load of a shared machine falls on each
// alike. Prints, per round and checkout, lines/s and the CPU per 1,000 lines of the daemon and of
// sqld (user + system from /proc, the figure the other processes disturb least). --prof <dir>: each
// daemon under `bun --cpu-prof` (read with scripts/bench/profile-top.ts).
import { rmSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { http, type Daemon } from "../../tests/helpers/daemon.ts";
import { startSqld, type Sqld } from "../../tests/support/sqld.ts";
import { ciFixture, cpuMsOf, owner } from "../bench.ts";
import { startCheckout, type CheckoutDaemon } from "./checkout-daemon.ts";
import { appendLoad, runnersWithJobs, type RunnerJob } from "./sqld.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: "string", default: "4" },
    seconds: { type: "string", default: "4" },
    ws: { type: "boolean", default: false },
    file: { type: "boolean", default: false },
    /** Run each daemon under `bun --cpu-prof`, writing sqld-append-<i>.cpuprofile into this directory. */
    prof: { type: "string" },
  },
});
if (positionals.length === 0) throw new Error("name at least one checkout");

interface Side {
  name: string;
  daemon: CheckoutDaemon;
  sqld: Sqld | undefined;
  jobs: RunnerJob[];
  stop(): Promise<void>;
}

async function start(named: string, i: number): Promise<Side> {
  const [checkout, given] = named.split("@") as [string, string | undefined];
  const mode = given ?? (values.file ? "file" : values.ws ? "ws" : "http");
  if (!["http", "ws", "file"].includes(mode)) throw new Error(`${named}: the database is @http, @ws or @file`);
  const sqld = mode === "file" ? undefined : await startSqld();
  const url = sqld && (mode === "ws" ? `libsql://127.0.0.1:${new URL(sqld.url).port}?tls=0` : sqld.url);
  const env: Record<string, string> = url ? { ROOST_DATABASE_URL: url } : {};
  if (values.prof) env.BUN_OPTIONS = `--cpu-prof --cpu-prof-dir=${resolve(values.prof)} --cpu-prof-name=sqld-append-${i}.cpuprofile`;
  const daemon = await startCheckout(resolve(checkout), env);
  const token = await owner({ url: daemon.url } as Daemon);
  const ci = await ciFixture({ url: daemon.url } as Daemon, token, "bench-webhook-secret-0123");
  const jobs = await runnersWithJobs(daemon.url, token, ci, checkout);
  return {
    name: named,
    daemon,
    sqld,
    jobs,
    async stop() {
      await ci.stop();
      daemon.child.kill();
      await daemon.child.exited;
      rmSync(daemon.dataDir, { recursive: true, force: true });
      await sqld?.stop();
    },
  };
}

const sides: Side[] = [];
try {
  for (const [i, checkout] of positionals.entries()) sides.push(await start(checkout, i));
  for (const s of sides) console.log(`${s.name}: daemon pid ${s.daemon.child.pid}${s.sqld ? `, sqld pid ${s.sqld.process.pid}` : ""}`);
  const totals = sides.map(() => ({ lines: 0, seconds: 0, daemon: 0, sqld: 0 }));
  for (let round = 0; round < Number(values.rounds); round++) {
    const line: string[] = [];
    for (const [i, side] of sides.entries()) {
      // The jobs' leases renewed first: the load of every checkout in a round outlasts a lease.
      for (const { runner, jobId } of side.jobs)
        await http(side.daemon.url, "POST", `/v1/runners/${runner.id}/heartbeat`, { token: runner.token, body: { job_ids: [jobId] } });
      const daemon0 = cpuMsOf(side.daemon.child.pid);
      const sqld0 = side.sqld ? cpuMsOf(side.sqld.process.pid) : 0;
      const load = await appendLoad(side.daemon.url, side.jobs, Number(values.seconds) * 1000);
      const stored = load.lines * load.seconds;
      const daemon = cpuMsOf(side.daemon.child.pid) - daemon0;
      const sqld = side.sqld ? cpuMsOf(side.sqld.process.pid) - sqld0 : 0;
      const t = totals[i]!;
      t.lines += stored;
      t.seconds += load.seconds;
      t.daemon += daemon;
      t.sqld += sqld;
      line.push(
        `${side.name}: ${Math.round(load.lines)} lines/s, CPU/1000 lines daemon ${((daemon / stored) * 1000).toFixed(0)} ms + sqld ${((sqld / stored) * 1000).toFixed(0)} ms, p50 ${load.p50.toFixed(1)} ms${load.errors ? `, ${load.errors} failed` : ""}`,
      );
    }
    console.log(line.join("  |  "));
  }
  console.log(
    sides
      .map((s, i) => {
        const t = totals[i]!;
        return `${s.name} overall: ${Math.round(t.lines / t.seconds)} lines/s, daemon ${((t.daemon / t.lines) * 1000).toFixed(1)} + sqld ${((t.sqld / t.lines) * 1000).toFixed(1)} ms CPU/1000 lines`;
      })
      .join("\n"),
  );
} finally {
  for (const side of sides) await side.stop();
}
