// The runner's side of the protocol (docs/runners.md): every call is retried on network errors
// and 5xx with exponential backoff and jitter (so a restarting daemon loses nothing and a fleet
// of runners does not retry in step), until the runner is told to stop.
export interface ApiAnswer {
  status: number;
  headers: Headers;
  body: any;
}

export class RunnerApi {
  constructor(
    readonly baseUrl: string,
    readonly runnerId: string,
    readonly token: string,
    private readonly stopping: AbortSignal,
  ) {}

  async call(method: string, path: string, body?: unknown, options: { timeoutMs?: number } = {}): Promise<ApiAnswer> {
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await fetch(`${this.baseUrl}/v1/runners/${this.runnerId}${path}`, {
          method,
          headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(options.timeoutMs ?? 60_000),
        });
        const text = await response.text();
        if (response.status >= 500 && !this.stopping.aborted) throw new Error(`HTTP ${response.status}`);
        return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
      } catch (error) {
        if (this.stopping.aborted) throw error;
        await Bun.sleep(backoffMs(attempt));
      }
    }
  }
}

/** 200 ms doubling to 10 s, with ±50 % jitter. */
export function backoffMs(attempt: number): number {
  const base = Math.min(10_000, 200 * 2 ** Math.min(attempt - 1, 10));
  return Math.round(base * (0.5 + Math.random()));
}
