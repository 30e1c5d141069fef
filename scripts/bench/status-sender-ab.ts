// `bun scripts/bench/status-sender-ab.ts <checkout> <checkout>... [--rounds 8] [--statuses 3000]`:
// the CPU time of one commit status sent to GitHub (a checkout's github.reportStatus, the call the
// commit-status reporter makes for each new build, lib/forges/commit-statuses.ts) with
// PER_FORGE_IN_FLIGHT (32) in flight, rounds alternated between checkouts. The host stand-in (an
// installation token, then 201 to every status, with GitHub's x-ratelimit-* headers) runs in a
// child process, so this process's user + system time (its HTTP client thread included) is the
// sender's own. Run with TMPDIR=/dev/shm.
import { generateKeyPairSync } from "node:crypto";
import { basename, resolve } from "node:path";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: "string", default: "8" }, statuses: { type: "string", default: "3000" } },
});
if (positionals.length === 0) throw new Error("name at least one checkout");

const STAND_IN = `
const status = JSON.stringify({ id: 1, state: "pending", description: "Build #1 is queued", context: "roost/bench", url: "${"x".repeat(200)}" });
const server = Bun.serve({ port: 0, async fetch(request) {
  await request.arrayBuffer();
  const headers = { "content-type": "application/json", "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4999", "x-ratelimit-reset": "4102444800" };
  if (new URL(request.url).pathname.endsWith("/access_tokens"))
    return new Response(JSON.stringify({ token: "ghs_bench", expires_at: new Date(Date.now() + 3600_000).toISOString() }), { status: 201, headers });
  return new Response(status, { status: 201, headers });
} });
console.log(server.port);
`;
const host = Bun.spawn([process.execPath, "-e", STAND_IN], { stdout: "pipe", stderr: "inherit" });
const port = await firstLine(host.stdout).then(Number);

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return text.trim();
}

const privateKey = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "pem", type: "pkcs1" }).toString();

interface Side {
  name: string;
  send(i: number): Promise<void>;
}

async function side(checkout: string, apiUrl: string): Promise<Side> {
  const { github } = await import(resolve(checkout, "lib/forges/github/index.ts"));
  const { createSecretBox } = await import(resolve(checkout, "lib/crypto/secret-box.ts"));
  const { sealCredentials } = await import(resolve(checkout, "lib/integrations/credentials.ts"));
  const secrets = await createSecretBox(crypto.getRandomValues(new Uint8Array(32)));
  const deps = { secrets, config: { integrations: { allowLinkLocal: false } }, clock: { now: () => Math.floor(Date.now() / 1000) } };
  const integration = {
    id: "integration-1",
    provider: "github",
    name: "bench",
    api_url: apiUrl,
    web_url: "https://github.com",
    app_id: "1",
    installation_id: "2",
    credentials_sealed: await sealCredentials(secrets, { private_key: privateKey, webhook_secret: "bench-webhook-secret-0123" }),
    created_by: null,
    created_at: 0,
    updated_at: 0,
    last_synced_at: null,
    last_sync_error: null,
  };
  const repository = { external_id: "1001", full_name: "acme/app" };
  return {
    name: basename(resolve(checkout)),
    async send(i) {
      // As the reporter reads each row from the database: a fresh copy of the integration.
      await github.reportStatus(deps, { ...integration }, repository, {
        status: "queued",
        sha: (i % 100_000).toString(16).padStart(40, "0"),
        url: `http://127.0.0.1:8080/v1/builds/build-${i}`,
        description: `Build #${i} is queued`,
        context: "roost/bench",
      });
    },
  };
}

function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

async function round(s: Side, statuses: number): Promise<number> {
  let next = 0;
  const before = cpuMs();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      for (let i = next++; i < statuses; i = next++) await s.send(i);
    }),
  );
  return ((cpuMs() - before) * 1000) / statuses;
}

try {
  const apiUrl = `http://127.0.0.1:${port}`;
  const sides = await Promise.all(positionals.map((c) => side(c, apiUrl)));
  for (const s of sides) await round(s, 500); // warm-up: the JIT, the installation token, the connections
  const per = new Map<string, number[]>(sides.map((s) => [s.name, []]));
  for (let r = 0; r < Number(values.rounds); r++) {
    const line: string[] = [];
    for (const s of r % 2 ? [...sides].reverse() : sides) {
      const us = await round(s, Number(values.statuses));
      per.get(s.name)!.push(us);
      line.push(`${s.name} ${us.toFixed(1)} µs`);
    }
    console.log(`round ${r + 1}: ${line.join(", ")}`);
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  for (const [name, v] of per) console.log(`${name}: median ${median(v).toFixed(1)} µs of this process's CPU a status (${v.length} rounds)`);
} finally {
  host.kill();
}
