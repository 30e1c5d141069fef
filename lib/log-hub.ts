// The per-build log hub, shaped like a Cloudflare Durable Object: one instance per build id, a
// `fetch(request)` face over its own state, reached through a namespace/stub interface. Under
// Bun the namespace keeps instances in this process (LocalLogHubNamespace); the same class runs
// as a real Durable Object in workerd (tests/lib/log-hub-miniflare.test.ts).
//
// The hub carries no log text: the database is the source of truth. It only knows the last
// sequence number it has heard of and wakes waiting readers when it grows:
//   POST /notify  {"last_seq": N}           → {"last_seq": max}
//   GET  /wait?after=N&timeout_ms=T          → {"last_seq": M} once M > N, or at the timeout
// Readers always re-read the database after waking, so a missed or early wake-up costs a
// query, never a line; a viewer on another daemon process learns of new lines by its own
// periodic re-read (docs/runners.md gives the latency).

export interface DurableObjectIdLike {
  toString(): string;
}

export interface DurableObjectStateLike {
  id: DurableObjectIdLike;
}

export class BuildLogHub {
  #lastSeq = 0;
  #waiters = new Set<{ after: number; wake: (seq: number) => void }>();

  constructor(readonly state: DurableObjectStateLike) {}

  get waiting(): number {
    return this.#waiters.size;
  }

  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname === "/notify") {
      const { last_seq } = (await request.json()) as { last_seq: number };
      if (Number.isInteger(last_seq) && last_seq > this.#lastSeq) this.#lastSeq = last_seq;
      for (const w of [...this.#waiters]) if (this.#lastSeq > w.after) (this.#waiters.delete(w), w.wake(this.#lastSeq));
      return Response.json({ last_seq: this.#lastSeq });
    }
    if (request.method === "GET" && url.pathname === "/wait") {
      const after = Number(url.searchParams.get("after") ?? "0");
      const timeout = Math.min(60_000, Math.max(0, Number(url.searchParams.get("timeout_ms") ?? "15000")));
      if (this.#lastSeq > after) return Response.json({ last_seq: this.#lastSeq });
      const seq = await new Promise<number>((resolve) => {
        const waiter = { after, wake: resolve };
        this.#waiters.add(waiter);
        setTimeout(() => {
          if (this.#waiters.delete(waiter)) resolve(this.#lastSeq);
        }, timeout);
      });
      return Response.json({ last_seq: seq });
    }
    return Response.json({ code: "not_found", message: "no such hub operation" }, { status: 404 });
  }
}

export interface LogHubStub {
  fetch(request: Request): Promise<Response>;
}

export interface LogHubNamespace {
  get(buildId: string): LogHubStub;
}

/** The in-process namespace: one hub per build id, dropped when idle. */
export class LocalLogHubNamespace implements LogHubNamespace {
  readonly #hubs = new Map<string, BuildLogHub>();

  get(buildId: string): LogHubStub {
    let hub = this.#hubs.get(buildId);
    if (!hub) this.#hubs.set(buildId, (hub = new BuildLogHub({ id: { toString: () => buildId } })));
    return {
      fetch: async (request) => {
        const response = await hub!.fetch(request);
        if (hub!.waiting === 0 && this.#hubs.size > 1000) this.#hubs.delete(buildId);
        return response;
      },
    };
  }

  get size(): number {
    return this.#hubs.size;
  }
}

/** Tell the hub of `buildId` that lines up to `lastSeq` exist. */
export async function notifyHub(hubs: LogHubNamespace, buildId: string, lastSeq: number): Promise<void> {
  await hubs.get(buildId).fetch(new Request("http://hub/notify", { method: "POST", body: JSON.stringify({ last_seq: lastSeq }) }));
}

/** Wait until the hub of `buildId` knows of a seq past `after`, or `timeoutMs`. */
export async function waitOnHub(hubs: LogHubNamespace, buildId: string, after: number, timeoutMs: number): Promise<number> {
  const response = await hubs.get(buildId).fetch(new Request(`http://hub/wait?after=${after}&timeout_ms=${timeoutMs}`));
  return ((await response.json()) as { last_seq: number }).last_seq;
}
