// `bun scripts/bench/webhook-cpu-ab.ts <checkout> <checkout>... [--rounds 8] [--pushes 2000] [--api] [--sqld]`:
// the CPU time of a webhook push (or, with --api, of POST /v1/projects/{id}/builds) in one
// process, through each checkout's own app (its tests/helpers: the real route table on a real
// database file, no listener, no background passes), rounds alternated between the checkouts. 64
// requests are in flight at a time, as the bench's 64 connections keep them, so the writes share
// commits as they do in the daemon. The main thread's CPU time per build (the JIT's and the
// collector's threads apart, which the process's user + system time shown beside it counts) leaves out
// the HTTP listener, wrk and the commit-status sender, and is disturbed far less than a daemon's
// by the other work of a shared machine; scripts/bench/webhook-ab.ts measures the daemon itself.
// Run with TMPDIR=/dev/shm to keep fsync out of it. --sqld puts each checkout's app on a libSQL
// server of its own (sqld over loopback, Hrana over HTTP) and prints sqld's CPU per build beside it.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { basename, resolve } from "node:path";
import { parseArgs } from "node:util";
import { signedPush } from "./github.ts";
import { startSqld } from "../../tests/support/sqld.ts";
import { cpuMsOf } from "../bench.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: "string", default: "8" },
    pushes: { type: "string", default: "2000" },
    api: { type: "boolean", default: false },
    sqld: { type: "boolean", default: false },
  },
});
if (positionals.length === 0) throw new Error("name at least one checkout");

interface Side {
  name: string;
  send(i: number): Promise<number>;
  /** The CPU time its sqld used so far (ms), or 0 on a file. */
  sqldCpu(): number;
}

async function side(checkout: string): Promise<Side> {
  const ci = await import(resolve(checkout, "tests/helpers/ci.ts"));
  const sqld = values.sqld ? await startSqld() : null;
  const fixture = await ci.startCiFixture(sqld ? { ROOST_DATABASE_URL: sqld.url } : undefined);
  const { t, owner, projectId } = fixture;
  const pipeline = (await ci.createPipeline(t, owner, projectId, { name: "bench", trigger_config: { branches: ["**"] }, concurrency: { max_concurrent: 50 } }))
    .id as string;
  const heads = new Map<number, string>();
  const request = (i: number): Request => {
    if (values.api)
      return new Request(`http://127.0.0.1:8080/v1/projects/${projectId}/builds`, {
        method: "POST",
        headers: { host: "127.0.0.1:8080", authorization: `Bearer ${owner}`, "content-type": "application/json" },
        body: JSON.stringify({ pipeline_id: pipeline, commit_sha: "c".repeat(40) }),
      });
    // As scripts/bench/github.ts pushDeliveries: one commit pushed to one of 64 branches.
    const branch = i % 64;
    const sha = createHash("sha1").update(`${checkout}:${i}`).digest("hex");
    const { body, signature } = signedPush(ci.WEBHOOK_SECRET, {
      branch,
      before: heads.get(branch) ?? "0".repeat(40),
      sha,
      message: `commit ${i}`,
      modified: ["lib/main.dart"],
      repository: { id: 1001, full_name: "acme/app" },
    });
    heads.set(branch, sha);
    return new Request("http://127.0.0.1:8080/v1/webhooks/github", {
      method: "POST",
      headers: {
        host: "127.0.0.1:8080",
        "content-type": "application/json",
        "x-github-event": "push",
        "x-github-delivery": crypto.randomUUID(),
        "x-hub-signature-256": signature,
      },
      body,
    });
  };
  return {
    name: basename(checkout),
    async send(i) {
      const response = await t.app.fetch(request(i), "127.0.0.1");
      await response.arrayBuffer();
      return response.status;
    },
    sqldCpu: () => (sqld ? cpuMsOf(sqld.process.pid) : 0),
  };
}

/** The main thread's time on a CPU, in ns (/proc schedstat): the JIT's and the collector's threads left out. */
function mainThreadNs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[0]);
}

const sides = [];
for (const checkout of positionals) sides.push(await side(resolve(checkout)));
const pushes = Number(values.pushes);
const results = new Map<string, number[]>();
let next = 0;
for (let round = 0; round < Number(values.rounds); round++) {
  const order = round % 2 ? [...sides].reverse() : sides;
  const line: string[] = [];
  for (const s of order) {
    const from = next;
    next += pushes;
    let sent = from;
    let failed = 0;
    const before = process.cpuUsage();
    const beforeMain = mainThreadNs();
    const beforeSqld = s.sqldCpu();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (sent < from + pushes) if ((await s.send(sent++)) >= 300) failed++;
      }),
    );
    const cpu = process.cpuUsage(before);
    const perBuild = (cpu.user + cpu.system) / pushes;
    const main = (mainThreadNs() - beforeMain) / 1000 / pushes;
    const sqld = ((s.sqldCpu() - beforeSqld) * 1000) / pushes;
    results.set(s.name, [...(results.get(s.name) ?? []), main]);
    line.push(
      `${s.name}: ${main.toFixed(0)} µs main thread (${perBuild.toFixed(0)} process)${values.sqld ? ` + sqld ${sqld.toFixed(0)}` : ""} CPU/build, ${Math.round((pushes * 1000) / (performance.now() - started))}/s${failed ? `, ${failed} failed` : ""}`,
    );
  }
  console.log(line.join("  |  "));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
console.log([...results].map(([name, xs]) => `${name}: median ${median(xs).toFixed(0)} µs main-thread CPU/build`).join("  |  "));
process.exit(0);
