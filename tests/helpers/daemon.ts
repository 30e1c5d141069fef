// A real `roost serve` process on a temporary data dir, for tests where the socket is the
// behaviour (peer addresses, the Unix management socket, restarts, SSE, two processes).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";

export const REPO_ROOT = resolve(import.meta.dir, "../..");
export const BUN = join(REPO_ROOT, "node_modules/.bin/bun");
export const ROOST = join(REPO_ROOT, "bin/roost.ts");

export interface Daemon {
  url: string;
  dataDir: string;
  env: Record<string, string>;
  process: Subprocess;
  /** Every log line the daemon wrote so far (JSON objects). */
  logs: Record<string, unknown>[];
  /** SIGTERM and wait for exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Runs `roost <args>` against this daemon's configuration. */
  cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
}

export interface DaemonOptions {
  /** Reuse a data dir (restart tests); a fresh temp dir otherwise. */
  dataDir?: string;
  listen?: string;
  env?: Record<string, string>;
  /** Remove the data dir on stop (default true for a fresh dir). */
  cleanup?: boolean;
  /** Run on a host of a test LAN (tests/support/netns.ts): `url` is then that host's address and the listening port. */
  host?: { run: string[]; address: string };
}

export async function startDaemon(options: DaemonOptions = {}): Promise<Daemon> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "roost-daemon-"));
  const cleanup = options.cleanup ?? options.dataDir === undefined;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/tmp",
    ROOST_DATA_DIR: dataDir,
    ROOST_LISTEN: options.listen ?? "127.0.0.1:0",
    ROOST_LOG_LEVEL: "debug",
    ...options.env,
  };
  const proc = Bun.spawn([...(options.host?.run ?? []), BUN, ROOST, "serve"], { env, cwd: REPO_ROOT, stdout: "pipe", stderr: "pipe" });
  const logs: Record<string, unknown>[] = [];
  const listening = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`daemon did not start in 20 s; logs: ${JSON.stringify(logs)}`)), 20_000);
    void (async () => {
      const decoder = new TextDecoder();
      let buffer = "";
      for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let nl: number;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          try {
            const entry = JSON.parse(line) as Record<string, unknown>;
            logs.push(entry);
            if (entry.msg === "roost listening") {
              clearTimeout(timer);
              resolveUrl(String(entry.url));
            }
          } catch {
            logs.push({ raw: line });
          }
        }
      }
      clearTimeout(timer);
      reject(new Error(`daemon exited before listening; logs: ${JSON.stringify(logs)}`));
    })();
  });
  // A daemon listening on 0.0.0.0 logs that address; the other hosts reach it at its host's.
  const url = options.host ? `http://${options.host.address}:${new URL(listening).port}` : listening;
  return {
    url,
    dataDir,
    env,
    process: proc,
    logs,
    async stop(signal = "SIGTERM") {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      const code = await proc.exited;
      if (cleanup) rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
    async cli(args) {
      const child = Bun.spawn([BUN, ROOST, ...args], { env, cwd: REPO_ROOT, stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      return { code, stdout, stderr };
    },
  };
}

/** A TCP port on 127.0.0.1 that was free a moment ago (a daemon to come, or an address where nothing listens). */
export function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

/** JSON over real HTTP; returns status, headers and the parsed body. */
export async function http(
  url: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers["content-type"] ??= "application/json";
  const response = await fetch(url + path, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: response.status, headers: response.headers, body };
}
