// `bun scripts/bench/in-process.ts <checkout> [<checkout>...]`: the server's own work per request
// without a socket: each checkout's app (tests/helpers/app.ts, its real route table on a bun:sqlite
// file) in this one process, called through app.fetch as the listener calls it, for GET /healthz
// and GET /v1/api-tokens (21 tokens) with an owner's API token and with a session. The checkouts
// alternate round by round; each figure is the process CPU time per request (user + system), the
// lowest and the median of the rounds. On a shared machine this moves far less than a wrk run:
// no load generator competes for the CPU, and there is no kernel TCP work in it.
//
// `--io`: before each request, one HTTP round trip to a bare Bun.serve in another process (what a
// daemon does between two requests: the socket's system calls, its event loop, another process on
// the CPU), and the CPU counted around app.fetch alone. The same app.fetch costs far more so than
// in the loop above (docs/benchmarks.md, "Where the daemon's CPU a request goes"): this is the
// figure the daemon's own requests see.
import { resolve } from "node:path";

const IO = process.argv.includes("--io");
const checkouts = process.argv
  .slice(2)
  .filter((arg) => arg !== "--io")
  .map((p) => resolve(p));
if (checkouts.length === 0) throw new Error("name at least one checkout");
const ROUNDS = 7;

/** The bare server of --io, in a process of its own. */
const peer = IO
  ? Bun.spawn([process.execPath, "-e", `const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("ok") }); console.log(s.port);`], {
      stdout: "pipe",
    })
  : null;
let peerUrl = "";
if (peer) {
  let out = "";
  for await (const chunk of peer.stdout as ReadableStream<Uint8Array>) {
    out += new TextDecoder().decode(chunk);
    if (out.includes("\n")) break;
  }
  peerUrl = `http://127.0.0.1:${out.trim()}/`;
}

const cpuNow = (): number => {
  const used = process.cpuUsage();
  return used.user + used.system;
};

/** What one cpuNow() pair itself costs (a getrusage system call each), taken off each --io figure. */
function measurementCost(): number {
  const n = 20_000;
  const before = cpuNow();
  for (let i = 0; i < n; i++) cpuNow();
  return (cpuNow() - before) / n;
}

interface Subject {
  name: string;
  fetch(request: Request, peer: string): Promise<Response>;
  headers: Record<string, Record<string, string>>;
  results: Map<string, number[]>;
  close(): void;
}

const subjects: Subject[] = [];
for (const checkout of checkouts) {
  const { createTestApp, bootstrapOwner } = await import(`${checkout}/tests/helpers/app.ts`);
  const t = await createTestApp();
  const session: string = await bootstrapOwner(t);
  const owner: string = (await t.call("POST", "/v1/api-tokens", { token: session, body: { name: "bench", role: "owner" } })).body.token;
  for (let i = 0; i < 20; i++) await t.call("POST", "/v1/api-tokens", { token: owner, body: { name: `listed-${i}`, role: "developer" } });
  subjects.push({
    name: checkout,
    fetch: (request, peer) => t.app.fetch(request, peer),
    headers: {
      "/healthz": {},
      "/v1/api-tokens (API token)": { authorization: `Bearer ${owner}` },
      "/v1/api-tokens (session)": { authorization: `Bearer ${session}` },
    },
    results: new Map(),
    close: () => t.close(),
  });
}

/** CPU µs per request over `n` requests (made beforehand, so their construction is not counted). */
async function cpuPerRequest(subject: Subject, scenario: string, n: number): Promise<number> {
  const path = scenario.split(" ")[0]!;
  const requests = Array.from(
    { length: n },
    () => new Request(`http://127.0.0.1:8080${path}`, { headers: { host: "127.0.0.1:8080", ...subject.headers[scenario] } }),
  );
  if (IO) {
    let used = 0;
    for (const request of requests) {
      await (await fetch(peerUrl)).text();
      const before = cpuNow();
      const response = await subject.fetch(request, "127.0.0.1");
      used += cpuNow() - before;
      if (response.status !== 200) throw new Error(`${subject.name} ${scenario}: ${response.status} ${await response.text()}`);
    }
    return used / n - measurementCost();
  }
  const before = process.cpuUsage();
  for (const request of requests) {
    const response = await subject.fetch(request, "127.0.0.1");
    if (response.status !== 200) throw new Error(`${subject.name} ${scenario}: ${response.status} ${await response.text()}`);
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n;
}

const scenarios = Object.keys(subjects[0]!.headers);
for (const subject of subjects) for (const scenario of scenarios) await cpuPerRequest(subject, scenario, 500); // warm up
for (let round = 0; round < ROUNDS; round++) {
  for (const subject of round % 2 ? [...subjects].reverse() : subjects) {
    for (const scenario of scenarios) {
      const figures = subject.results.get(scenario) ?? [];
      figures.push(await cpuPerRequest(subject, scenario, scenario === "/healthz" ? 4000 : 1500));
      subject.results.set(scenario, figures);
    }
  }
}
for (const subject of subjects) {
  console.log(subject.name);
  for (const [scenario, figures] of subject.results) {
    const sorted = [...figures].sort((a, b) => a - b);
    console.log(`  ${scenario}: lowest ${sorted[0]!.toFixed(1)} µs, median ${sorted[sorted.length >> 1]!.toFixed(1)} µs CPU/request`);
  }
  subject.close();
}
peer?.kill();
process.exit(0);
