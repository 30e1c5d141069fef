// Two `roost serve` on a libSQL server (sqld) that stops answering without closing anything: the
// network between them drops every packet (a blackhole), so connections already open stay open
// and new ones are accepted and never answered. Each request to the server has a deadline
// (ROOST_DATABASE_TIMEOUT_MS, docs/operations.md "Several hosts"): a request that needs the
// database answers 503 database_unavailable within it, /readyz says not ready, and once the
// network is back the daemons serve again by themselves, over HTTP and over WebSocket.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { startSqld, type Sqld } from "../support/sqld.ts";

/** The deadline the daemons are given. */
const TIMEOUT_MS = 1000;
/** What an answer may take beyond the deadline on a loaded 2-core machine. */
const SLACK_MS = 2500;

/**
 * A stand-in for the network between a host and sqld: a TCP proxy that forwards both ways until
 * `blackhole()`, then forwards nothing (open connections go silent, new ones are accepted and
 * never answered) until `heal()`.
 */
interface BlackholeProxy {
  port: number;
  blackhole(): void;
  heal(): void;
  stop(): Promise<void>;
}

async function startBlackholeProxy(upstreamPort: number): Promise<BlackholeProxy> {
  let dropping = false;
  const open = new Set<Socket>();
  /** Silences each forwarded connection: nothing read, nothing written, nothing closed. */
  let silence: Array<() => void> = [];
  const server: Server = createServer((client) => {
    open.add(client);
    client.on("close", () => open.delete(client));
    if (dropping) {
      client.on("error", () => {});
      return client.pause();
    }
    const upstream = connect(upstreamPort, "127.0.0.1");
    open.add(upstream);
    upstream.on("close", () => open.delete(upstream));
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
    silence.push(() => {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    blackhole() {
      dropping = true;
      for (const cut of silence) cut();
      silence = [];
    },
    heal() {
      dropping = false;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A request that gives up after 10 s (a daemon that hangs on the database never answers). */
async function timed(url: string, path: string, token?: string): Promise<{ status: number; body: unknown; retryAfter: string | null; ms: number }> {
  const started = performance.now();
  const response = await fetch(url + path, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
    signal: AbortSignal.timeout(10_000),
  }).catch((error) => {
    throw new Error(`${path} got no answer after ${Math.round(performance.now() - started)} ms: ${error}`);
  });
  const body = await response.json();
  return { status: response.status, body, retryAfter: response.headers.get("retry-after"), ms: performance.now() - started };
}

let sqld: Sqld;
let proxy: BlackholeProxy;
let daemons: Daemon[] = [];
let owner = "";

beforeAll(async () => {
  sqld = await startSqld();
  proxy = await startBlackholeProxy(Number(new URL(sqld.url).port));
  const env = {
    ROOST_SECRET_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64"),
    ROOST_LOG_LEVEL: "info",
    ROOST_DATABASE_TIMEOUT_MS: String(TIMEOUT_MS),
  };
  // One over HTTP, one over WebSocket, both through the proxy.
  daemons = [];
  for (const url of [`http://127.0.0.1:${proxy.port}`, `libsql://127.0.0.1:${proxy.port}?tls=0`]) {
    daemons.push(await startDaemon({ env: { ...env, ROOST_DATABASE_URL: url } }));
  }
  owner = (await http(daemons[0]!.url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } })).body.session_token;
}, 60_000);
afterAll(async () => {
  await Promise.all(daemons.map((d) => d.stop()));
  await proxy?.stop();
  await sqld?.stop();
  if (sqld) rmSync(join(sqld.dir, ".."), { recursive: true, force: true });
});

describe("sqld behind a blackhole", () => {
  test("requests answer 503 database_unavailable within the deadline, /readyz says not ready, and both daemons serve again once the network is back", async () => {
    for (const d of daemons) expect((await timed(d.url, "/v1/users/me", owner)).status).toBe(200);

    proxy.blackhole();
    const unavailable = {
      status: 503,
      retryAfter: "5",
      body: { code: "database_unavailable", message: "The database does not answer; try again in a moment." },
    };
    for (const d of daemons) {
      // Twice in a row: the second request waits on a new connection, which is never answered either.
      for (let i = 0; i < 2; i++) {
        const me = await timed(d.url, "/v1/users/me", owner);
        expect({ status: me.status, retryAfter: me.retryAfter, body: me.body }).toEqual(unavailable);
        expect(me.ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
        const ready = await timed(d.url, "/readyz");
        expect({ status: ready.status, body: ready.body }).toEqual({ status: 503, body: { code: "not_ready", message: "The database does not answer." } });
        expect(ready.ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
      }
    }
    const logs = daemons.flatMap((d) => d.logs);
    expect(logs.filter((l) => /unhandled/.test(String(l.msg)))).toEqual([]);

    // Connections opened during the blackhole stay silent; a request caught on one fails by the
    // deadline, and the next one opens a new connection.
    proxy.heal();
    for (const d of daemons) {
      const answers: number[] = [];
      for (let i = 0; i < 5 && answers.at(-1) !== 200; i++) answers.push((await timed(d.url, "/readyz")).status);
      expect(answers.at(-1)).toBe(200);
      expect((await timed(d.url, "/v1/users/me", owner)).status).toBe(200);
    }
  }, 60_000);
});
