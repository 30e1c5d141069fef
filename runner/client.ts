// The runner's side of the protocol (docs/runners.md "Protocol"). Every answer is parsed with the
// schema both programs share (lib/runners/protocol-wire.ts). Network errors and 5xx are retried
// with exponential backoff and jitter, so a restarting daemon loses nothing and a fleet of
// runners does not retry in step; the runner says once when it loses Roost and once when it has
// it back, not on every attempt.
import type { z } from "zod";
import {
  ArtifactAnswer,
  CacheAnswer,
  CacheLookupAnswer,
  ClaimAnswer,
  ConnectAnswer,
  ErrorAnswer,
  HEADER,
  HeartbeatAnswer,
  LogAppendAnswer,
  ReleaseAnswer,
  TestReportAnswer,
  type FinishRequest,
  type StepReport,
} from "../lib/runners/protocol-wire.ts";
import type { ShippedLine } from "./shipper.ts";
import { PublishHeartbeatAnswer, type ClaimedPublish, type PublishFinishRequest } from "../lib/publishing/wire.ts";

/** What a claim handed this runner: a build's job, or a deployment to publish (runner/publish/). */
export type Claimed = z.output<typeof ClaimAnswer>;

export type Log = (msg: string, fields?: Record<string, unknown>) => void;

/** An answer that is not the call's success: its status and {code, message}. */
export interface Refusal {
  ok: false;
  status: number;
  code: string;
  message: string;
  headers: Headers;
}
export type Answer<T> = { ok: true; status: number; body: T; headers: Headers } | Refusal;

/** The runner is stopping and its time to hand back is over (or the call was aborted). */
export class Stopping extends Error {}

/** How long a stopping runner keeps trying to hand its job back before it exits anyway. */
export const HAND_BACK_MS = 3000;
/**
 * The same, when Roost was already unreachable as the stop came: one prompt attempt, no 3 s of
 * retries against a daemon that is not there (docs/runners.md "Stopping a runner").
 */
export const HAND_BACK_UNREACHABLE_MS = 1000;

export class RunnerApi {
  #unreachableSince: number | null = null;
  #failedAttempts = 0;
  #handBackUntil = Infinity;

  constructor(
    readonly baseUrl: string,
    readonly runnerId: string,
    readonly token: string,
    private readonly stopping: AbortSignal,
    private readonly log: Log,
  ) {
    stopping.addEventListener("abort", () => (this.#handBackUntil = Date.now() + (this.#unreachableSince === null ? HAND_BACK_MS : HAND_BACK_UNREACHABLE_MS)), {
      once: true,
    });
  }

  /** Ends at once when the runner stops: there is nothing to hand back before it is connected. */
  connect(body: unknown): Promise<Answer<z.output<typeof ConnectAnswer>>> {
    return this.#json("POST", "/connect", body, ConnectAnswer, 200, { abort: this.stopping });
  }

  /**
   * A long poll; `abort` ends it at once (the runner is stopping). 204 answers null. A runner that
   * publishes says so (`accepts`), and may then be handed a deployment instead of a job.
   */
  async claim(claimId: string, waitSeconds: number, abort?: AbortSignal, accepts: ("build" | "publish")[] = ["build"]): Promise<Answer<Claimed | null>> {
    return this.#json("POST", "/jobs/claim", { claim_id: claimId, wait_seconds: waitSeconds, accepts }, ClaimAnswer.nullable(), 201, {
      timeoutMs: (waitSeconds + 20) * 1000,
      abort,
    });
  }

  publishHeartbeat(deploymentId: string): Promise<Answer<z.output<typeof PublishHeartbeatAnswer>>> {
    return this.#json("POST", `/deployments/${deploymentId}/heartbeat`, undefined, PublishHeartbeatAnswer, 200);
  }

  appendPublishLogs(deploymentId: string, firstLine: number, lines: ShippedLine[]): Promise<Answer<z.output<typeof LogAppendAnswer>>> {
    return this.#json("POST", `/deployments/${deploymentId}/logs`, { first_line: firstLine, lines }, LogAppendAnswer, 202);
  }

  finishPublish(deploymentId: string, body: PublishFinishRequest): Promise<Answer<unknown>> {
    return this.#json("POST", `/deployments/${deploymentId}/finish`, body, null, 200);
  }

  releasePublish(deploymentId: string): Promise<Answer<unknown>> {
    return this.#json("POST", `/deployments/${deploymentId}/release`, undefined, null, 200);
  }

  /** The URL and credential of a publish's artifact download (runner/publish/download.ts streams it to a file). */
  artifactRequest(publish: ClaimedPublish, artifactId: string): { url: string; headers: Record<string, string> } {
    return {
      url: `${this.baseUrl}/v1/runners/${this.runnerId}/deployments/${publish.deployment_id}/artifacts/${artifactId}`,
      headers: { authorization: `Bearer ${this.token}` },
    };
  }

  heartbeat(jobIds: string[]): Promise<Answer<z.output<typeof HeartbeatAnswer>>> {
    return this.#json("POST", "/heartbeat", { job_ids: jobIds }, HeartbeatAnswer, 200);
  }

  reportStep(jobId: string, step: string, report: StepReport): Promise<Answer<unknown>> {
    return this.#json("PUT", `/jobs/${jobId}/steps/${step}`, report, null, 200);
  }

  appendLogs(jobId: string, firstLine: number, lines: ShippedLine[]): Promise<Answer<z.output<typeof LogAppendAnswer>>> {
    return this.#json("POST", `/jobs/${jobId}/logs`, { first_line: firstLine, lines }, LogAppendAnswer, 202);
  }

  finish(jobId: string, body: FinishRequest): Promise<Answer<unknown>> {
    return this.#json("POST", `/jobs/${jobId}/finish`, body, null, 200);
  }

  release(jobId: string): Promise<Answer<z.output<typeof ReleaseAnswer>>> {
    return this.#json("POST", `/jobs/${jobId}/release`, undefined, ReleaseAnswer, 200);
  }

  /** Streams a file to the daemon; the body is made again for each attempt by `body()`. */
  uploadArtifact(
    jobId: string,
    path: string,
    sha256: string,
    size: number,
    body: () => ReadableStream<Uint8Array>,
  ): Promise<Answer<z.output<typeof ArtifactAnswer>>> {
    return this.#upload(`/jobs/${jobId}/artifacts?path=${encodeURIComponent(path)}`, { [HEADER.artifactSha256]: sha256 }, size, body, ArtifactAnswer);
  }

  /** The shared dependency cache a job restores (docs/runners.md "Shared caches"), or `cache: null`. */
  findCache(jobId: string, key: string, version: string): Promise<Answer<z.output<typeof CacheLookupAnswer>>> {
    return this.#json("GET", `/jobs/${jobId}/caches?key=${encodeURIComponent(key)}&version=${version}`, undefined, CacheLookupAnswer, 200);
  }

  /** The URL and credential of a shared cache archive's download (runner/job/cache.ts streams it to a file). */
  cacheRequest(jobId: string, cacheId: string): { url: string; headers: Record<string, string> } {
    return {
      url: `${this.baseUrl}/v1/runners/${this.runnerId}/jobs/${jobId}/caches/${cacheId}`,
      headers: { authorization: `Bearer ${this.token}` },
    };
  }

  /** Streams a cache archive to the daemon, saved in the job's scope; the body is made again for each attempt by `body()`. */
  uploadCache(
    jobId: string,
    key: string,
    version: string,
    sha256: string,
    size: number,
    body: () => ReadableStream<Uint8Array>,
  ): Promise<Answer<z.output<typeof CacheAnswer>>> {
    return this.#upload(`/jobs/${jobId}/caches?key=${encodeURIComponent(key)}&version=${version}`, { [HEADER.cacheSha256]: sha256 }, size, body, CacheAnswer);
  }

  /** The first `size` bytes of a test report (the caller caps them at TEST_REPORT_LIMIT); `whole` is the file's size. */
  uploadTestReport(
    jobId: string,
    path: string,
    workspace: string,
    size: number,
    whole: number,
    body: () => ReadableStream<Uint8Array>,
  ): Promise<Answer<z.output<typeof TestReportAnswer>>> {
    const headers = {
      "content-type": "application/octet-stream",
      "content-length": String(size),
      [HEADER.workspace]: workspace,
      [HEADER.reportBytes]: String(whole),
    };
    return this.#call("PUT", `/jobs/${jobId}/test-reports?path=${encodeURIComponent(path)}`, () => ({ body: body(), headers }), TestReportAnswer, 201, {
      timeoutMs: 10 * 60_000,
    });
  }

  /**
   * A PUT of `size` bytes that may take half an hour (an artifact, a cache archive), with the
   * headers that announce its digest; a full disk at the daemon (507) is final, not retried.
   */
  #upload<T>(path: string, digest: Record<string, string>, size: number, body: () => ReadableStream<Uint8Array>, schema: z.ZodType<T>): Promise<Answer<T>> {
    const headers = { ...digest, "content-type": "application/octet-stream", "content-length": String(size) };
    return this.#call("PUT", path, () => ({ body: body(), headers }), schema, 201, { timeoutMs: 30 * 60_000, finalOn507: true });
  }

  #json<T>(
    method: string,
    path: string,
    body: unknown,
    schema: z.ZodType<T> | null,
    success: number,
    options: { timeoutMs?: number; abort?: AbortSignal } = {},
  ): Promise<Answer<T>> {
    const init = (): { body?: string; headers: Record<string, string> } =>
      body === undefined ? { headers: {} } : { body: JSON.stringify(body), headers: { "content-type": "application/json" } };
    return this.#call(method, path, init, schema, success, options);
  }

  async #call<T>(
    method: string,
    path: string,
    init: () => { body?: string | ReadableStream<Uint8Array>; headers: Record<string, string> },
    schema: z.ZodType<T> | null,
    success: number,
    options: { timeoutMs?: number; abort?: AbortSignal; finalOn507?: boolean },
  ): Promise<Answer<T>> {
    for (let attempt = 1; ; attempt++) {
      // A stopping runner's calls (handing back, finishing) end with its hand-back time.
      const timeoutMs = Math.min(options.timeoutMs ?? 60_000, Math.max(1, this.#handBackUntil - Date.now()));
      const signals = [AbortSignal.timeout(timeoutMs), ...(options.abort ? [options.abort] : [])];
      let response: Response;
      let text: string;
      try {
        const { body, headers } = init();
        response = await fetch(`${this.baseUrl}/v1/runners/${this.runnerId}${path}`, {
          method,
          headers: { authorization: `Bearer ${this.token}`, ...headers },
          body,
          signal: AbortSignal.any(signals),
          // A streamed request body (artifacts) needs half-duplex (Fetch standard, "duplex").
          ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
        } as RequestInit);
        text = await response.text();
        // A full disk (507) on an upload is the server's final word on that file; other 5xx are retried.
        if (response.status >= 500 && !(options.finalOn507 && response.status === 507)) throw new Error(`HTTP ${response.status}`);
      } catch (error) {
        if (options.abort?.aborted) throw new Stopping("aborted");
        this.#lost(error, attempt);
        if (Date.now() >= this.#handBackUntil) throw new Stopping("the runner is stopping");
        // The wait between attempts ends early when the runner stops: the call then ends at once
        // (options.abort) or retries within the hand-back time.
        const wasStopping = this.stopping.aborted;
        await sleepUnless(Math.min(backoffMs(attempt), Math.max(0, this.#handBackUntil - Date.now())), wasStopping ? null : this.stopping);
        if (options.abort?.aborted) throw new Stopping("aborted");
        continue;
      }
      this.#reached();
      const json = text ? safeJson(text) : null;
      if (response.status === success || (success === 201 && response.status === 204 && path === "/jobs/claim")) {
        if (response.status === 204) return { ok: true, status: 204, body: null as T, headers: response.headers };
        const parsed = schema ? schema.safeParse(json) : { success: true as const, data: json as T };
        if (!parsed.success) throw new Error(`Roost answered ${method} ${path} with a body this runner does not understand: ${parsed.error.message}`);
        return { ok: true, status: response.status, body: parsed.data, headers: response.headers };
      }
      const error = ErrorAnswer.safeParse(json);
      return {
        ok: false,
        status: response.status,
        code: error.success ? error.data.code : "unknown",
        message: error.success ? error.data.message : text.slice(0, 200),
        headers: response.headers,
      };
    }
  }

  /** One line when Roost becomes unreachable, not one per attempt. */
  #lost(error: unknown, attempt: number): void {
    this.#failedAttempts++;
    if (this.#unreachableSince !== null) return;
    this.#unreachableSince = Date.now();
    this.log(`cannot reach Roost at ${this.baseUrl}; retrying with backoff (up to ${MAX_BACKOFF_MS / 1000} s between attempts)`, {
      level: "warn",
      error: (error as Error).message,
      attempt,
    });
  }

  #reached(): void {
    if (this.#unreachableSince === null) return;
    this.log(`reached Roost again at ${this.baseUrl}`, {
      unreachable_seconds: Math.round((Date.now() - this.#unreachableSince) / 1000),
      failed_attempts: this.#failedAttempts,
    });
    this.#unreachableSince = null;
    this.#failedAttempts = 0;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** Sleeps `ms`, or less when `signal` aborts first; leaves no timer behind. */
export function sleepUnless(ms: number, signal: AbortSignal | null): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

const MAX_BACKOFF_MS = 10_000;

/** 200 ms doubling to 10 s, with ±50 % jitter. */
export function backoffMs(attempt: number): number {
  const base = Math.min(MAX_BACKOFF_MS, 200 * 2 ** Math.min(attempt - 1, 10));
  return Math.round(base * (0.5 + Math.random()));
}
