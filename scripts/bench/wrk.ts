// HTTP load for `npm run bench` from wrk (scripts/ensure-bench-tools installs it). A Bun fetch
// loop saturates near 29k req/s on the machine where bare Bun.serve answers 150k under wrk, so
// it measured the load generator, not the server. wrk sends requests pre-built into a file by
// this module (scripts/bench/wrk-driver.lua explains the format) and prints one JSON line.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface RequestSpec {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface WrkSpec {
  /** Origin, e.g. http://127.0.0.1:1234. */
  origin: string;
  /** Sent round-robin ("cycle"; one request is built once by wrk) or each at most once ("once"; the run then also ends when they run out). */
  requests: RequestSpec[];
  mode: "cycle" | "once";
  connections: number;
  threads: number;
  durationMs: number;
}

export interface WrkResult {
  requests: number;
  seconds: number;
  rps: number;
  /** Connect, read, write and timeout errors, and responses with status >= 400. */
  errors: number;
  statusErrors: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  max_ms: number;
  /** Threads that ran out of distinct requests before the duration ended ("once" mode). */
  exhaustedThreads: number;
}

const DRIVER = join(import.meta.dir, "wrk-driver.lua");

/** The raw bytes of one HTTP/1.1 request to `host`. */
export function rawRequest(host: string, spec: RequestSpec): Buffer {
  const body = spec.body === undefined ? undefined : Buffer.from(spec.body);
  const head = [`${spec.method ?? "GET"} ${spec.path} HTTP/1.1`, `Host: ${host}`];
  for (const [name, value] of Object.entries(spec.headers ?? {})) head.push(`${name}: ${value}`);
  if (body) head.push(`Content-Length: ${body.length}`);
  return Buffer.concat([Buffer.from(head.join("\r\n") + "\r\n\r\n"), body ?? Buffer.alloc(0)]);
}

export async function runWrk(spec: WrkSpec): Promise<WrkResult> {
  const dir = mkdtempSync(join(tmpdir(), "roost-wrk-"));
  try {
    const host = new URL(spec.origin).host;
    const parts: Buffer[] = [];
    for (const request of spec.requests) {
      const raw = rawRequest(host, request);
      parts.push(Buffer.from(`${raw.length}\n`), raw);
    }
    const file = join(dir, "requests");
    writeFileSync(file, Buffer.concat(parts));
    const child = Bun.spawn(
      [
        "wrk",
        "-t",
        String(spec.threads),
        "-c",
        String(spec.connections),
        "-d",
        `${Math.round(spec.durationMs / 1000)}s`,
        "--timeout",
        "10s",
        "-s",
        DRIVER,
        spec.origin + "/",
      ],
      {
        env: {
          ...process.env,
          ROOST_WRK_REQUESTS: file,
          ROOST_WRK_THREADS: String(spec.threads),
          ROOST_WRK_MODE: spec.mode === "cycle" && spec.requests.length === 1 ? "static" : spec.mode,
        },
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    const line = out.split("\n").find((l) => l.startsWith("WRK_JSON "));
    if (code !== 0 || !line) throw new Error(`wrk failed (exit ${code}): ${out}\n${err}`);
    const r = JSON.parse(line.slice("WRK_JSON ".length)) as Record<string, number>;
    // A count-bounded run that ran out on every thread sent for as long as its last thread did.
    const seconds = (r.exhausted_threads === spec.threads ? r.last_exhausted_us! : r.duration_us!) / 1e6;
    return {
      requests: r.requests!,
      seconds,
      rps: r.requests! / seconds,
      errors: r.errors_connect! + r.errors_read! + r.errors_write! + r.errors_timeout! + r.errors_status!,
      statusErrors: r.errors_status!,
      p50_ms: r.p50_us! / 1000,
      p90_ms: r.p90_us! / 1000,
      p99_ms: r.p99_us! / 1000,
      max_ms: r.max_us! / 1000,
      exhaustedThreads: r.exhausted_threads!,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
