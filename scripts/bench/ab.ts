// `bun scripts/bench/ab.ts <checkout> <checkout>... [--path /healthz] [--token] [--rounds 4] [--seconds 4]`:
// the same request against `roost serve` from several checkouts (git worktrees of the commits to
// compare), their wrk runs alternated round by round so that the load of a shared machine falls on
// each alike. Prints, per round and checkout, requests/s and the server's CPU time per request (user
// + system from /proc, the figure the other processes disturb least). --token lists 21 API tokens
// with an owner's token, as the api-tokens scenario of scripts/bench.ts does. --prof <dir> runs each
// daemon under `bun --cpu-prof` and prints the rounds' windows for scripts/bench/profile-top.ts.
import { rmSync } from "node:fs";
import { basename, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startCheckout } from "./checkout-daemon.ts";
import { cpuMsOf } from "../bench.ts";
import { http } from "../../tests/helpers/daemon.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    path: { type: "string", default: "/healthz" },
    token: { type: "boolean", default: false },
    rounds: { type: "string", default: "4" },
    seconds: { type: "string", default: "4" },
    prof: { type: "string" },
  },
});
if (positionals.length === 0) throw new Error("name at least one checkout");

async function start(checkout: string, i: number) {
  const env: Record<string, string> = values.prof
    ? { BUN_OPTIONS: `--cpu-prof --cpu-prof-dir=${resolve(values.prof)} --cpu-prof-name=ab-${i}-${basename(checkout)}.cpuprofile` }
    : {};
  return { ...(await startCheckout(checkout, env)), headers: [] as string[] };
}

const daemons = await Promise.all(positionals.map((p, i) => start(resolve(p), i)));
try {
  if (values.token)
    for (const d of daemons) {
      const login = await http(d.url, "POST", "/v1/auth/local/login", { body: { email: "bench@example.test" } });
      const owner = (await http(d.url, "POST", "/v1/api-tokens", { token: login.body.session_token, body: { name: "bench", role: "owner" } })).body.token;
      for (let i = 0; i < 20; i++) await http(d.url, "POST", "/v1/api-tokens", { token: owner, body: { name: `listed-${i}`, role: "developer" } });
      d.headers = ["-H", `Authorization: Bearer ${owner}`];
    }
  for (let round = 0; round < Number(values.rounds); round++) {
    const line: string[] = [];
    for (const d of daemons) {
      const before = cpuMsOf(d.child.pid);
      const from = Date.now();
      const out = await new Response(Bun.spawn(["wrk", "-t2", "-c32", `-d${values.seconds}s`, ...d.headers, d.url + values.path]).stdout).text();
      const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
      const failed = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1];
      const cpu = ((cpuMsOf(d.child.pid) - before) * 1000) / requests;
      line.push(
        `${d.name}: ${Math.round(requests / Number(values.seconds))} req/s, ${cpu.toFixed(0)} µs CPU/request${failed ? `, ${failed} not 2xx` : ""}${values.prof ? ` [${from}-${Date.now()}]` : ""}`,
      );
    }
    console.log(line.join("  |  "));
  }
} finally {
  for (const d of daemons) {
    d.child.kill();
    await d.child.exited;
    rmSync(d.dataDir, { recursive: true, force: true });
  }
}
