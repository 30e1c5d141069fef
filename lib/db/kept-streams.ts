// Hrana streams kept open across requests, for the reads and write batches Roost sends a remote
// libSQL server (lib/db/libsql.ts). A Hrana stream is one SQLite connection on the server
// (https://github.com/tursodatabase/libsql/blob/main/docs/HRANA_3_SPEC.md, "Overview"), and
// @libsql/client opens a stream for each call and closes it after: sqld then opens a connection,
// sets it up, reads the whole schema and prepares every statement afresh for each request, about
// 3 ms of its CPU against 0.4 ms for the same SELECT on a stream kept open (measured with sqld
// 0.24 on Roost's schema, over HTTP and over WebSocket alike; docs/benchmarks.md "Issue 24").
// So the requests that carry most of the load use streams kept here, through
// @libsql/hrana-client, the protocol library @libsql/client is built on; interactive
// transactions stay on @libsql/client.
import * as hrana from "@libsql/hrana-client";
import { LibsqlBatchError, LibsqlError } from "@libsql/client/web";
import type { InArgs } from "@libsql/client";
import type { ResultSet } from "./database.ts";
import { plainResult } from "./libsql.ts";

/** A statement as lib/db/libsql.ts hands it to a server: only the named arguments its SQL uses. */
export type HranaStatement = { sql: string; args: InArgs };

/**
 * sqld drops an HTTP stream left idle for 10 s ("STREAM_EXPIRED"); one idle this long is replaced
 * before it is used rather than after a refused request.
 */
const IDLE_REPLACE_MS = 5_000;

/** The Hrana client for a `libsql:`, `http(s):` or `ws(s):` URL, as @libsql/client reads them (`libsql:` is WebSocket; `?tls=0` turns TLS off). */
export function openHrana(url: string, authToken: string | undefined, fetch: (request: Request) => Promise<Response>): hrana.Client {
  const given = new URL(url);
  // A URL's scheme cannot be changed from `libsql:` to `ws:` in place (WHATWG URL: special and non-special schemes).
  const parsed = given.protocol === "libsql:" ? new URL(`${given.searchParams.get("tls") === "0" ? "ws" : "wss"}:${url.slice("libsql:".length)}`) : given;
  const token = authToken ?? parsed.searchParams.get("authToken") ?? undefined;
  parsed.searchParams.delete("tls");
  parsed.searchParams.delete("authToken");
  const client = parsed.protocol === "http:" || parsed.protocol === "https:" ? hrana.openHttp(parsed, token, fetch) : hrana.openWs(parsed, token);
  client.intMode = "number";
  return client;
}

/**
 * One stream kept open on `client()` (the client may be replaced: a WebSocket that closed or
 * stopped answering), replaced when it closed (a request failed on the way), when it was idle long enough
 * for the server to drop it, or when the server answers that it did.
 */
export class KeptStream {
  readonly #client: () => hrana.Client;
  #stream: hrana.Stream | null = null;
  #owner: hrana.Client | null = null;
  #usedAt = 0;

  constructor(client: () => hrana.Client) {
    this.#client = client;
  }

  /** Runs `use` on the kept stream. A request the server refused for the stream's expiry ran nothing, and runs once more on a new stream. */
  async run<T>(use: (stream: hrana.Stream) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      let stream: hrana.Stream | null = null;
      try {
        stream = this.#current();
        return await use(stream);
      } catch (error) {
        if (stream && this.#stream === stream && (stream.closed || expired(error))) this.#drop();
        if (attempt === 0 && expired(error)) continue;
        // A client already closed (a WebSocket the server dropped) refuses the stream itself.
        throw asLibsqlError(error);
      } finally {
        this.#usedAt = performance.now();
      }
    }
  }

  close(): void {
    this.#drop();
  }

  #current(): hrana.Stream {
    const client = this.#client();
    if (this.#stream && (this.#stream.closed || this.#owner !== client || performance.now() - this.#usedAt > IDLE_REPLACE_MS)) this.#drop();
    if (!this.#stream) {
      this.#stream = client.openStream();
      this.#owner = client;
    }
    return this.#stream;
  }

  #drop(): void {
    this.#stream?.closeGracefully();
    this.#stream = null;
    this.#owner = null;
  }
}

/**
 * The server does not know the stream (and ran nothing of the request): it expired, or the server
 * restarted since ("Received an invalid baton", an HTTP 400 in plain text).
 */
function expired(error: unknown): boolean {
  for (
    let e = error as { code?: unknown; message?: unknown; cause?: unknown } | null | undefined, depth = 0;
    e && typeof e === "object" && depth < 3;
    depth++
  ) {
    if (e.code === "STREAM_EXPIRED" || /invalid baton/i.test(String(e.message))) return true;
    e = e.cause as typeof e;
  }
  return false;
}

/** One statement, alone (autocommit). */
export async function executeOn(stream: hrana.Stream, stmt: HranaStatement): Promise<ResultSet> {
  try {
    return fromHrana(await stream.query(toHrana(stmt)));
  } catch (error) {
    throw asLibsqlError(error);
  }
}

/**
 * "write": the statements in one transaction, in one request: BEGIN IMMEDIATE, each statement only
 * if the one before it succeeded, COMMIT, and ROLLBACK unless the COMMIT succeeded, as
 * @libsql/client's `batch` sends them. "read": the statements in one request, each on its own
 * (autocommit), as each would run alone. A statement that failed throws LibsqlBatchError with its index.
 *
 * Either way the kept connection is never left inside a transaction. sqld ends a request at once,
 * between two of its statements, when its answer would pass the size it answers (10 MB by
 * default, RESPONSE_TOO_LARGE: a builder error stops the program, libsql-server/src/connection/program.rs
 * in https://github.com/tursodatabase/libsql): a read transaction left open there would keep
 * every later read on the stream on the data of then, and a write transaction would keep the
 * write lock. So reads take no transaction, and a write batch the server stopped is rolled back
 * on its stream before anything else is sent there (the write queue sends one request at a time).
 */
export async function batchOn(stream: hrana.Stream, stmts: HranaStatement[], mode: "write" | "read"): Promise<ResultSet[]> {
  const batch = stream.batch(false);
  const write = mode === "write";
  const begin = write ? batch.step() : undefined;
  const began = begin?.run("BEGIN IMMEDIATE");
  began?.catch(() => undefined);
  let last = begin;
  const answers = stmts.map((stmt) => {
    const step = last ? batch.step().condition(hrana.BatchCond.ok(last)) : batch.step();
    if (write) last = step;
    const answer = step.query(toHrana(stmt));
    answer.catch(() => undefined);
    return answer;
  });
  let committed: Promise<unknown> | undefined;
  if (write) {
    const commit = batch.step().condition(hrana.BatchCond.ok(last!));
    committed = commit.run("COMMIT");
    committed.catch(() => undefined);
    batch
      .step()
      .condition(hrana.BatchCond.not(hrana.BatchCond.ok(commit)))
      .run("ROLLBACK")
      .catch(() => undefined);
  }
  try {
    await batch.execute();
  } catch (error) {
    // Stopped by the server between two statements (a stream that closed has no connection left).
    if (write && !stream.closed) await stream.run("ROLLBACK").catch(() => undefined);
    throw asLibsqlError(error);
  }
  try {
    await began;
  } catch (error) {
    throw asLibsqlError(error);
  }
  const results: ResultSet[] = [];
  for (let i = 0; i < answers.length; i++) {
    let rows: hrana.RowsResult | undefined;
    try {
      rows = await answers[i];
    } catch (error) {
      const e = asLibsqlError(error);
      throw e instanceof LibsqlError
        ? new LibsqlBatchError(e.message, i, e.code, e.extendedCode, e.rawCode, e.cause instanceof Error ? e.cause : undefined)
        : e;
    }
    if (rows === undefined)
      throw new LibsqlBatchError("Statement in a batch was not executed, probably because the transaction has been rolled back", i, "TRANSACTION_CLOSED");
    results.push(fromHrana(rows));
  }
  try {
    await committed;
  } catch (error) {
    throw asLibsqlError(error);
  }
  return results;
}

function toHrana(stmt: HranaStatement): hrana.Stmt {
  const out = new hrana.Stmt(stmt.sql);
  if (Array.isArray(stmt.args)) out.bindIndexes(stmt.args as hrana.InValue[]);
  else for (const [name, value] of Object.entries(stmt.args)) out.bindName(name, value as hrana.InValue);
  return out;
}

/** Hrana's rows as lib/db/libsql.ts hands @libsql/client's on. */
function fromHrana(rs: hrana.RowsResult): ResultSet {
  return plainResult(
    rs.columnNames.map((c) => c ?? ""),
    rs.rows,
    rs.affectedRowCount,
    rs.lastInsertRowid,
  );
}

/** Hrana's errors as @libsql/client reports them (LibsqlError with the server's code), so lib/db/database.ts reads both alike. */
function asLibsqlError(error: unknown): unknown {
  if (!(error instanceof hrana.ClientError)) return error;
  return new LibsqlError(error.message, codeOf(error), undefined, undefined, error);
}

function codeOf(e: hrana.ClientError): string {
  if (e instanceof hrana.ResponseError && e.code !== undefined) return e.code;
  if (e instanceof hrana.ProtoError) return "HRANA_PROTO_ERROR";
  if (e instanceof hrana.ClosedError) return e.cause instanceof hrana.ClientError ? codeOf(e.cause) : "HRANA_CLOSED_ERROR";
  if (e instanceof hrana.WebSocketError) return "HRANA_WEBSOCKET_ERROR";
  if (e instanceof hrana.HttpServerError) return "SERVER_ERROR";
  // The requests pending on a client this process closed ("Client was manually closed").
  if (/\bclosed\b/i.test(e.message)) return "HRANA_CLOSED_ERROR";
  return "UNKNOWN";
}
