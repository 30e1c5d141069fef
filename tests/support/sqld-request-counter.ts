// A stand-in in front of a libSQL server (tests/support/sqld.ts) that forwards every Hrana-over-HTTP
// request to it and counts them: each is a round trip a daemon on another host pays, and the ones
// of a write transaction are made while holding the server's write lock, which every other daemon
// waits for. Counted per runner request, they are the figure load does not disturb (docs/benchmarks.md).

export interface RequestCount {
  /** Hrana pipeline requests (https://github.com/tursodatabase/libsql/blob/main/docs/HRANA_3_SPEC.md, "Pipeline"). */
  requests: number;
  /** Of those, the ones of a write transaction: its BEGIN (with what is sent along) and every request until its COMMIT. */
  writes: number;
}

export interface SqldRequestCounter {
  /** Where a daemon points ROOST_DATABASE_URL (http://127.0.0.1:port). */
  url: string;
  /** The requests `action` causes. */
  count(action: () => Promise<unknown>): Promise<RequestCount>;
  stop(): void;
}

export function startSqldRequestCounter(sqldUrl: string): SqldRequestCounter {
  const seen: RequestCount = { requests: 0, writes: 0 };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const body = request.method === "GET" || request.method === "HEAD" ? undefined : await request.text();
      if (/\/pipeline$/.test(url.pathname) && body !== undefined) {
        seen.requests++;
        // A stream's later requests carry its baton: an interactive transaction after its BEGIN.
        const { baton } = JSON.parse(body) as { baton?: string | null };
        if (body.includes('"BEGIN IMMEDIATE"') || baton) seen.writes++;
      }
      const headers = new Headers(request.headers);
      headers.delete("host");
      const answer = await fetch(`${sqldUrl}${url.pathname}${url.search}`, { method: request.method, headers, body });
      return new Response(await answer.arrayBuffer(), { status: answer.status, headers: answer.headers });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    async count(action) {
      const before = { ...seen };
      await action();
      return { requests: seen.requests - before.requests, writes: seen.writes - before.writes };
    },
    stop() {
      server.stop(true);
    },
  };
}
