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
  /** The streams (connections on sqld) `action` opens: its requests that carry no baton. */
  opened(action: () => Promise<unknown>): Promise<number>;
  /**
   * The statements `action` sends, BEGIN, COMMIT and ROLLBACK apart: sqld prepares each one afresh,
   * about 150 µs of its CPU whatever its text (docs/benchmarks.md "Webhook pushes on sqld"), and
   * a trigger is prepared with the statement that fires it.
   */
  statements(action: () => Promise<unknown>): Promise<number>;
  stop(): void;
}

export function startSqldRequestCounter(sqldUrl: string): SqldRequestCounter {
  const seen: RequestCount = { requests: 0, writes: 0 };
  let opened = 0;
  let statements = 0;
  /** The batons of streams inside a write transaction (an interactive one, between its BEGIN IMMEDIATE and its COMMIT or ROLLBACK). */
  const inTransaction = new Set<string>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const body = request.method === "GET" || request.method === "HEAD" ? undefined : await request.text();
      let ends: boolean | null = null;
      if (/\/pipeline$/.test(url.pathname) && body !== undefined) {
        seen.requests++;
        // Streams are kept open across requests (lib/db/kept-streams.ts), so a baton alone says
        // nothing: a request holds the write lock when it begins a write transaction or goes on
        // inside one. It ends the transaction when it commits or rolls back.
        const { baton, requests } = JSON.parse(body) as { baton?: string | null; requests?: HranaRequest[] };
        if (!baton) opened++;
        statements += statementsOf(requests ?? []);
        if (body.includes('"BEGIN IMMEDIATE"') || (baton && inTransaction.has(baton))) {
          seen.writes++;
          ends = /"sql":"(COMMIT|ROLLBACK)"/.test(body);
        }
        if (baton) inTransaction.delete(baton);
      }
      const headers = new Headers(request.headers);
      headers.delete("host");
      const answer = await fetch(`${sqldUrl}${url.pathname}${url.search}`, { method: request.method, headers, body });
      const bytes = await answer.arrayBuffer();
      if (ends === false) {
        const { baton } = JSON.parse(new TextDecoder().decode(bytes)) as { baton?: string | null };
        if (baton) inTransaction.add(baton);
      }
      return new Response(bytes, { status: answer.status, headers: answer.headers });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    async count(action) {
      const before = { ...seen };
      await action();
      return { requests: seen.requests - before.requests, writes: seen.writes - before.writes };
    },
    async opened(action) {
      const before = opened;
      await action();
      return opened - before;
    },
    async statements(action) {
      const before = statements;
      await action();
      return statements - before;
    },
    stop() {
      server.stop(true);
    },
  };
}

/** A Hrana pipeline request: a statement alone, or a batch of them. */
interface HranaRequest {
  type: string;
  stmt?: { sql?: string };
  batch?: { steps: { stmt: { sql?: string } }[] };
}

function statementsOf(requests: HranaRequest[]): number {
  const sqls = requests.flatMap((r) => (r.type === "execute" && r.stmt ? [r.stmt] : r.type === "batch" && r.batch ? r.batch.steps.map((s) => s.stmt) : []));
  return sqls.filter((s) => !/^\s*(BEGIN|COMMIT|ROLLBACK)\b/i.test(s.sql ?? "")).length;
}
