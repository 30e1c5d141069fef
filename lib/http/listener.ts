// The API's TCP listener: Bun's node:http server (the same native HTTP/1.1 parser as Bun.serve)
// around App.fetch. Bun.serve answers what its parser refuses by itself: an empty 400, 431 or
// 505, or no answer at all for an unknown or lower-case method. node:http hands those requests
// to a 'clientError' listener, so here every answer is JSON {code, message} from the catalogue.
// It also bounds how long a client may take to send a request, which neither server does
// (docs/operations.md, "Malformed and slow requests").
//
// Bun's node:http server is itself a Bun.serve whose requests are turned into IncomingMessage
// and ServerResponse objects in JavaScript. Once listening, that Bun.serve is given a fetch
// handler (its reload()): a well-formed request then reaches App.fetch as the native Request,
// and its Response is written natively, at about a third of the CPU per request; what the parser
// refuses still goes to 'clientError' (servedNatively below). Where this Bun has no such
// Bun.serve, requests keep going through node:http's objects (serveRequest).
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { ApiError } from "./errors.ts";
import { renderError, wholeBodyOf, withListenedBody, type ListenedBody } from "./io.ts";
import type { ConnectionControl } from "./app.ts";
import type { Logger } from "../daemon/log.ts";

/** What the listener serves: the app, or a stand-in while it starts. */
export interface HttpHandler {
  fetch(request: Request, peer: string | null, connection: ConnectionControl): Promise<Response>;
  /** The answer to a method no route has, for a method a fetch Request cannot carry (CONNECT, TRACE, `get`, `FOO`). */
  refuseMethod(method: string, pathname: string): Response;
  /** The answer when fetch throws (the last safety net: never an HTML page or a stack trace). */
  error(error: unknown): Response;
}

export interface ListenerOptions {
  hostname: string;
  port: number;
  /** Where a request without Host (HTTP/1.0) is taken to have been sent; the bound address when null. */
  fallbackOrigin: string | null;
  /**
   * Seconds a client has to send a request's head (from the connection's start or its previous
   * answer; else the connection is closed) and then its body (from its head; else 408
   * request_timeout and the connection is closed). A route that takes long uploads lifts the body
   * bound for its request (ConnectionControl.setBodyTimeout).
   */
  requestTimeoutSeconds: number;
  /** A connection with no traffic for this long is closed; SSE streams and long polls change it for theirs. */
  idleTimeoutSeconds: number;
  log: Logger;
}

export interface Listener {
  hostname: string;
  port: number;
  /** Whether well-formed requests reach the handler as Bun.serve's own Request (else through node:http's objects). */
  natively: boolean;
  /** Stops accepting; in-flight requests finish unless `force`, which closes every connection now. */
  stop(force: boolean): Promise<void>;
}

/** Headers over this many bytes in all are refused with 431 (Bun.serve's own limit, kept). */
export const MAX_HEADER_BYTES = 16 * 1024;

/** Methods a client may have meant when it sent one in lower case (RFC 9110 section 9.1: methods are case-sensitive). */
const STANDARD_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]);

/** RFC 9110 section 5.6.2: a method is a token. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

interface SocketState {
  /** Requests received on this connection and not answered yet (HTTP/1.1 pipelining). */
  inFlight: number;
  /** The answer being written, if any: a parse error in its body must not write a second one. */
  answering: ServerResponse | null;
  /** The body stream of the request being read, so a parse error in its body can end it. */
  body: ReadableStreamDefaultController<Uint8Array> | null;
  headTimer: Timer | null;
  /** When the connection began waiting for a request's head (performance.now()), or null while a request is in flight. */
  headSince: number | null;
  /** The client's address, read once per connection. */
  peer: string | null;
  /** The answer to a malformed request pipelined behind requests in flight, sent when they are answered. */
  refusal: Response | null;
  /** Served natively: the body of the request being read, so a parse error in it can end it. */
  nativeBody: RequestBody | null;
  /** Served natively: the last answer is a stream Bun may still be writing. */
  streaming: boolean;
}

/** A request body read through the listener, which bounds its time and says whether it was all read. */
interface RequestBody extends ListenedBody {
  /** Whether the client sent all of it (the connection can then carry the next request). */
  complete: boolean;
  /** Ends the body's reading with `error` (the handler's next read throws it). */
  fail(error: ApiError): void;
  /** Seconds from now for the rest of the body; 0 = no bound. */
  bound(seconds: number): void;
}

export async function listen(handler: HttpHandler, options: ListenerOptions): Promise<Listener> {
  const sockets = new Map<Socket, SocketState>();
  const stateOf = (socket: Socket): SocketState => {
    let state = sockets.get(socket);
    if (!state) {
      state = {
        inFlight: 0,
        answering: null,
        body: null,
        headTimer: null,
        headSince: null,
        peer: socket.remoteAddress ?? null,
        refusal: null,
        nativeBody: null,
        streaming: false,
      };
      if (!socket.destroyed) sockets.set(socket, state);
    }
    return state;
  };
  /** Set by stop(): each connection closes once its requests are answered, as Bun.serve's stop() does. */
  let stopping = false;

  // The head must come within the bound: armed when the connection opens and whenever it has no
  // request in flight; a client trickling its headers is disconnected (it never sent a request to answer).
  // One timer per connection that re-arms itself for what is left (as Node's own socket timeouts
  // do), not a timer set and cleared for every request of a kept-alive connection.
  const headBoundMs = options.requestTimeoutSeconds * 1000;
  const armHeadTimer = (socket: Socket, state: SocketState) => {
    state.headSince = performance.now();
    if (state.headTimer === null) state.headTimer = setTimeout(checkHead, headBoundMs, socket, state);
  };
  const checkHead = (socket: Socket, state: SocketState) => {
    state.headTimer = null;
    if (state.headSince === null) return;
    const left = state.headSince + headBoundMs - performance.now();
    if (left <= 0) socket.destroy();
    else state.headTimer = setTimeout(checkHead, left, socket, state);
  };
  const disarmHeadTimer = (state: SocketState) => {
    state.headSince = null;
  };
  const clearHeadTimer = (state: SocketState) => {
    state.headSince = null;
    if (state.headTimer) clearTimeout(state.headTimer);
    state.headTimer = null;
  };

  /** The connection's part of an answer's end: the next request's bounds, or a refusal pipelined behind it, or the close on stop. */
  const answered = (req: IncomingMessage, res: ServerResponse, state: SocketState) => {
    state.inFlight--;
    if (state.answering === res) state.answering = null;
    if (state.inFlight > 0 || req.socket.destroyed) return;
    if (stopping) return void req.socket.destroy();
    if (state.refusal) {
      void rawAnswer(req.socket, state.refusal);
      state.refusal = null;
      return;
    }
    req.socket.setTimeout(options.idleTimeoutSeconds * 1000);
    armHeadTimer(req.socket, state);
  };

  const server: Server = createServer({ maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: true }, (req, res) => {
    const state = stateOf(req.socket);
    state.inFlight++;
    disarmHeadTimer(state);
    serveRequest(req, res, state).catch((error: unknown) => {
      options.log.error("unhandled listener error", { error });
      req.socket.destroy();
    });
  });

  /** The Bun.serve under the node:http server, found once it listens; null until then, or in a Bun without one. */
  let front: NativeFront | null = null;

  /** Served natively, a request is told from its connection by the client's address and port. */
  const byPeer = new PeerMap();

  server.on("connection", (socket: Socket) => {
    socket.setNoDelay(true);
    socket.on("timeout", () => socket.destroy());
    refuseMissingHostAsJson(socket);
    if (front !== null) {
      const connected = { address: socket.remoteAddress ?? "", port: socket.remotePort ?? 0, socket, state: stateOf(socket) };
      byPeer.add(connected);
      socket.on("close", () => byPeer.delete(connected));
    }
    // Bun may report a connection only once its first request is under way: that request's own
    // idle timeout (an SSE stream's none) and the absence of a head timer stand then.
    const state = stateOf(socket);
    if (state.inFlight === 0) {
      // Served natively, the idle timeout is Bun.serve's own, set per request (servedNatively):
      // node:http's socket timer is refreshed only by node:http's own requests and writes.
      if (front === null) socket.setTimeout(options.idleTimeoutSeconds * 1000);
      armHeadTimer(socket, state);
    }
    socket.on("close", () => {
      clearHeadTimer(stateOf(socket));
      sockets.delete(socket);
    });
  });

  // What the parser refused: answered here, as JSON, and the connection closed.
  server.on("clientError", (error: Error & { code?: string; rawPacket?: Buffer }, socket: Socket) => {
    const state = stateOf(socket);
    clearHeadTimer(state);
    if (error.code === "ECONNRESET" || error.code === "HPE_INVALID_EOF_STATE" || !socket.writable) {
      socket.destroy();
      return;
    }
    if (state.nativeBody !== null) {
      // Served natively, the head was fine and a handler is reading the body, whose framing
      // broke: the parser is done with this connection, so the refusal is written here; the
      // handler's next read fails and its own answer goes nowhere.
      const framing = new ApiError("invalid_request", "The request body's framing is not valid HTTP/1.1 (RFC 9112 section 7).");
      state.nativeBody.fail(framing);
      state.nativeBody = null;
      void rawAnswer(socket, renderError(framing));
      return;
    }
    if (state.body !== null) {
      // The head was fine and a handler is reading the body, whose framing broke (a bad chunk
      // size): the reader gets the error and the handler answers it; an answer already under way is cut.
      state.body.error(new ApiError("invalid_request", "The request body's framing is not valid HTTP/1.1 (RFC 9112 section 7)."));
      state.body = null;
      if (state.answering?.headersSent) socket.destroy();
      return;
    }
    const refusal = refuseUnparsed(error, handler);
    options.log.debug("request refused by the parser", { parser_code: error.code ?? null, status: refusal.status });
    // Pipelined after requests still being answered: it is answered after them, in order.
    if (state.inFlight > 0) state.refusal = refusal;
    else void rawAnswer(socket, refusal);
  });

  // CONNECT asks a proxy for a tunnel; node:http routes it here, and without a listener closes the connection.
  server.on("connect", (_req: IncomingMessage, socket: Socket) => {
    void rawAnswer(socket, renderError(new ApiError("invalid_request", "Roost is not a proxy: CONNECT is refused (RFC 9110 section 9.3.6).")));
  });

  let fallbackOrigin = options.fallbackOrigin ?? "";

  /**
   * A well-formed request as Bun.serve parsed it: the same checks as buildRequest, the same
   * bounds (the head's per connection, the body's per request), the answer written natively.
   */
  async function servedNatively(request: Request, front: NativeFront): Promise<Response> {
    // Closed after this long without a byte either way, now and after the answer, until the next request sets it again.
    front.timeout(request, options.idleTimeoutSeconds);
    const ip = front.requestIP(request);
    const connected = ip ? byPeer.get(ip.address, ip.port) : undefined;
    const state = connected?.state ?? null;
    if (state) {
      state.inFlight++;
      state.streaming = false;
      disarmHeadTimer(state);
    }
    let response: Response;
    let body: RequestBody | null = null;
    const built = nativeRequest(request, fallbackOrigin, handler);
    if (built instanceof Response) {
      response = built;
      // CONNECT asks for a tunnel: refused, and the connection, which the client meant to hand over, closed.
      if (request.method === "CONNECT") response.headers.set("connection", "close");
    } else {
      body = built.hasBody ? boundedBody(request, options.requestTimeoutSeconds) : null;
      if (state) state.nativeBody = body;
      // Bun.serve's own Request carries the body to the app (read whole, natively: readBodyBytes),
      // unless it needed another URL; then a Request of ours streams it. A stream of ours per
      // request, and the Request around it, cost about a tenth of a runner's claim or finish
      // (docs/benchmarks.md, "The runner fleet's CPU per job: request bodies and savepoints").
      const served =
        body === null
          ? built.request
          : built.request === request
            ? withListenedBody(request, body)
            : new Request(built.url ?? request.url, {
                method: request.method,
                headers: request.headers,
                body: body.stream,
                signal: request.signal,
                duplex: "half",
              } as RequestInit);
      const connection: ConnectionControl = {
        setIdleTimeout: (seconds) => front.timeout(request, seconds),
        setBodyTimeout: (seconds) => body?.bound(seconds),
      };
      try {
        response = await handler.fetch(served, ip?.address ?? null, connection);
      } catch (error) {
        response = handler.error(error);
      }
      if (state && state.nativeBody === body) state.nativeBody = null;
    }
    // A body not all read (refused early, timed out) would be taken for the next request's head.
    if (stopping || (body !== null && !body.complete)) response.headers.set("connection", "close");
    if (state && connected) {
      state.inFlight--;
      // The next request's head is bounded from this answer on when it is written at once (JSON,
      // none, a small file). A streamed one (an event stream, a log, an artifact) is written
      // natively with no word of its end: until the connection's next request only the idle
      // timeout bounds it, and a graceful stop leaves it to finish.
      // A json() answer is known by its text first: reading `response.body` makes Bun build a stream of it.
      const atOnce = wholeBodyOf(response) !== null || request.method === "HEAD" || response.body === null || lengthAtMost(response, WHOLE_BODY_BYTES);
      state.streaming = !atOnce;
      if (state.inFlight === 0 && atOnce && !stopping) armHeadTimer(connected.socket, state);
      if (state.inFlight === 0 && state.refusal) {
        // A malformed request pipelined behind this one: its refusal follows this answer, which Bun writes once this returns.
        const refusal = state.refusal;
        state.refusal = null;
        setImmediate(() => void rawAnswer(connected.socket, refusal));
      }
    }
    return response;
  }

  async function serveRequest(req: IncomingMessage, res: ServerResponse, state: SocketState): Promise<void> {
    const peer = state.peer;
    const built = buildRequest(req, fallbackOrigin, handler);
    if (built instanceof Response) {
      res.once("close", () => answered(req, res, state));
      return writeResponse(req, res, built, state, stopping);
    }

    const { request, abort } = built;
    let bodyDeadline: Timer | null = null;
    let controller: ReadableStreamDefaultController<Uint8Array> | null = null;
    if (built.body) {
      controller = built.body;
      state.body = controller;
      // 408 by the body's reader if the body is not all here in time (the connection then closes: it is not complete).
      bodyDeadline = setTimeout(() => {
        if (req.complete) return;
        controller?.error(bodyTimeout(options.requestTimeoutSeconds));
      }, options.requestTimeoutSeconds * 1000);
      req.once("end", () => {
        if (bodyDeadline) clearTimeout(bodyDeadline);
        if (state.body === controller) state.body = null;
      });
    }
    res.once("close", () => {
      if (bodyDeadline) clearTimeout(bodyDeadline);
      if (state.body === controller) state.body = null;
      // The client went away before the whole answer: long polls and streams stop.
      if (!res.writableFinished) abort.abort();
      answered(req, res, state);
    });

    const connection: ConnectionControl = {
      setIdleTimeout: (seconds) => req.socket.setTimeout(seconds * 1000),
      setBodyTimeout: (seconds) => {
        if (bodyDeadline) clearTimeout(bodyDeadline);
        bodyDeadline = null;
        if (seconds > 0 && !req.complete) {
          bodyDeadline = setTimeout(() => controller?.error(bodyTimeout(seconds)), seconds * 1000);
        }
      },
    };
    let response: Response;
    try {
      response = await handler.fetch(request, peer, connection);
    } catch (error) {
      response = handler.error(error);
    }
    await writeResponse(req, res, response, state, stopping);
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });
  front = nativeFrontOf(server);
  // Through node:http's objects, buildRequest answers a request without Host (by its version).
  if (front === null) (server as Server & { requireHostHeader: boolean }).requireHostHeader = false;
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : options.port;
  fallbackOrigin = options.fallbackOrigin ?? `http://${options.hostname.includes(":") ? `[${options.hostname}]` : options.hostname}:${port}`;
  front?.reload({ fetch: (request: Request) => servedNatively(request, front!) });

  return {
    hostname: options.hostname,
    port,
    natively: front !== null,
    stop(force) {
      const closed = stopping ? Promise.resolve() : new Promise<void>((resolve) => server.close(() => resolve()));
      stopping = true;
      for (const [socket, state] of sockets) if (force || (state.inFlight === 0 && !state.streaming)) socket.destroy();
      if (force) return closed;
      // Resolved once the last connection has closed (its answer written).
      return closed.then(async () => {
        while ([...sockets.keys()].some((socket) => !socket.destroyed)) await Bun.sleep(10);
      });
    },
  };
}

/** The Bun.serve under Bun's node:http server, as far as the listener uses it (https://bun.sh/docs/api/http). */
interface NativeFront {
  reload(options: { fetch(request: Request): Promise<Response> }): void;
  requestIP(request: Request): { address: string; port: number } | null;
  timeout(request: Request, seconds: number): void;
}

/**
 * The Bun.serve a listening node:http server runs on. Bun keeps it in a property of its own (a
 * symbol, not an API), so it is found by its shape; null where there is none, and the listener
 * then serves through node:http's objects. Its 'clientError' hook stays with it after reload().
 */
function nativeFrontOf(server: Server): NativeFront | null {
  for (const key of Object.getOwnPropertySymbols(server)) {
    const value = (server as unknown as Record<symbol, Partial<NativeFront> | null | undefined>)[key];
    if (
      typeof value === "object" &&
      value !== null &&
      typeof value.reload === "function" &&
      typeof value.requestIP === "function" &&
      typeof value.timeout === "function"
    )
      return value as NativeFront;
  }
  return null;
}

/** Whether `response` says a length of at most `bytes`. */
function lengthAtMost(response: Response, bytes: number): boolean {
  const length = response.headers.get("content-length");
  return length !== null && Number(length) <= bytes;
}

/** A connection served natively, found again by its client's address and port. */
interface Connected {
  address: string;
  port: number;
  socket: Socket;
  state: SocketState;
}

/**
 * Connections by their client's port, then address: one lookup by a number a request, no key
 * string made and hashed (a port is mostly one connection's, unless clients on several addresses use it).
 */
class PeerMap {
  readonly #byPort = new Map<number, Connected[]>();

  add(connected: Connected): void {
    const same = this.#byPort.get(connected.port);
    if (same === undefined) this.#byPort.set(connected.port, [connected]);
    else same.push(connected);
  }

  get(address: string, port: number): Connected | undefined {
    const same = this.#byPort.get(port);
    if (same === undefined) return undefined;
    // The newest first: a port reused before the old connection's close event has come is the new connection's.
    for (let i = same.length - 1; i >= 0; i--) if (same[i]!.address === address) return same[i];
    return undefined;
  }

  delete(connected: Connected): void {
    const same = this.#byPort.get(connected.port);
    if (same === undefined) return;
    const at = same.indexOf(connected);
    if (at !== -1) same.splice(at, 1);
    if (same.length === 0) this.#byPort.delete(connected.port);
  }
}

/** The first bytes of the answer Bun's node:http writes itself to an HTTP/1.1 request without Host. */
const BUN_MISSING_HOST_ANSWER = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n";

/**
 * An HTTP/1.1 request without Host never reaches the handler (the parser refuses it:
 * requireHostHeader), and Bun's node:http writes a bare 400 to the connection itself; this
 * connection writes the catalogue's JSON refusal instead. (Bun.serve's Request does not say the
 * HTTP version, so without the parser's check an HTTP/1.0 request, which may omit Host, could
 * not be told from it.)
 */
function refuseMissingHostAsJson(socket: Socket): void {
  const write = socket.write;
  socket.write = function (this: Socket, chunk: unknown, ...rest: unknown[]): boolean {
    if (typeof chunk === "string" && chunk.startsWith(BUN_MISSING_HOST_ANSWER)) {
      // Written now: Bun ends the connection right after its own write.
      const refusal = renderError(new ApiError("invalid_request", "An HTTP/1.1 request needs a Host header (RFC 9112 section 3.2)."));
      chunk = rawBytes(refusal, Buffer.from(wholeBodyOf(refusal)!));
    }
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as Socket["write"];
}

/**
 * A request Bun.serve parsed, checked as buildRequest checks one from node:http: the URL to serve
 * it as when it is not the request's own (the listener's for HTTP/1.0 without Host) and whether it has a body,
 * or the answer when it cannot be served (a Host that does not parse, CONNECT).
 */
function nativeRequest(request: Request, fallbackOrigin: string, handler: HttpHandler): { request: Request; url: string | null; hasBody: boolean } | Response {
  const method = request.method;
  if (method === "CONNECT") return renderError(new ApiError("invalid_request", "Roost is not a proxy: CONNECT is refused (RFC 9110 section 9.3.6)."));
  const host = request.headers.get("host");
  let url: URL | null;
  let served = request;
  if (host === null) {
    // HTTP/1.0: an HTTP/1.1 request without Host was refused by the parser (refuseMissingHostAsJson).
    url = URL.parse(request.url, fallbackOrigin);
    if (url === null || !request.url.startsWith("/")) return renderError(new ApiError("invalid_request", "The request target is not a valid path."));
    served = new Request(url.href, { method, headers: request.headers, signal: request.signal });
  } else if (validHosts.has(host)) {
    url = null;
  } else {
    // Bun.serve builds the URL from Host (an absolute-form target's authority is not kept).
    url = URL.parse(request.url);
    if (url === null || url.host !== host.toLowerCase().replace(/:80$/, "")) {
      return renderError(new ApiError("invalid_request", "The Host header is not a valid host[:port] (RFC 9112 section 3.2)."));
    }
    if (validHosts.size >= MAX_VALID_HOSTS) validHosts.clear();
    validHosts.add(host);
  }
  if (!STANDARD_METHODS.has(method) && !TOKEN.test(method)) return handler.refuseMethod(method, (url ?? new URL(request.url)).pathname);
  // From the head alone: reading `request.body` makes Bun build a stream for it (about 4 µs a request).
  const hasBody = method !== "GET" && method !== "HEAD" && (request.headers.has("transfer-encoding") || Number(request.headers.get("content-length") ?? 0) > 0);
  return { request: served, url: url?.href ?? null, hasBody };
}

/**
 * Host headers already found to be a valid host[:port], as sent: a client sends the same one on
 * every request, which is then one lookup instead of a URL parsed and compared.
 */
const validHosts = new Set<string>();
const MAX_VALID_HOSTS = 256;

/**
 * A native request body, bounded: its rest must come within `seconds` (else the handler's read
 * throws 408 request_timeout), and the listener learns whether the client sent all of it. Read
 * whole (`bytes`, a body of a declared length) or through a stream of the listener's own (made on
 * first use), never both.
 */
function boundedBody(native: Request, seconds: number): RequestBody {
  let made: ReadableStream<Uint8Array> | null = null;
  let reader: { cancel(): Promise<void> } | null = null;
  let controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  let deadline: Timer | null = null;
  /** Failed or cancelled: the native reader's end that follows is not the body's. */
  let cut = false;
  let failure: ApiError | null = null;
  /** Rejects the whole read under way, if any. */
  let failRead: ((error: ApiError) => void) | null = null;
  const closedEarly = () => new ApiError("invalid_request", "The client closed the connection before it sent the whole request body.");
  const ended = () => {
    body.complete = !cut;
    if (deadline) clearTimeout(deadline);
  };
  const openStream = (): ReadableStream<Uint8Array> => {
    const native$ = (native.body as ReadableStream<Uint8Array>).getReader();
    reader = native$;
    return new ReadableStream<Uint8Array>(
      {
        start(c) {
          controller = c;
          if (failure) c.error(failure);
        },
        async pull(c) {
          let chunk: Awaited<ReturnType<typeof native$.read>>;
          try {
            chunk = await native$.read();
          } catch {
            body.fail(closedEarly());
            return;
          }
          try {
            if (chunk.done) {
              ended();
              c.close();
            } else c.enqueue(chunk.value);
          } catch {
            // already errored (timeout, broken framing) or cancelled
          }
        },
        cancel() {
          // The handler wants no more of it (413): the connection closes after the answer.
          cut = true;
          if (deadline) clearTimeout(deadline);
          native$.cancel().catch(() => {});
        },
      },
      { highWaterMark: 0 },
    );
  };
  const body: RequestBody = {
    complete: false,
    get stream() {
      return (made ??= openStream());
    },
    bytes() {
      return new Promise<Uint8Array>((resolve, reject) => {
        if (failure) return reject(failure);
        failRead = reject;
        native.bytes().then(
          (bytes) => {
            failRead = null;
            ended();
            resolve(bytes);
          },
          () => body.fail(closedEarly()),
        );
      });
    },
    fail(error) {
      cut = true;
      failure ??= error;
      if (deadline) clearTimeout(deadline);
      try {
        controller?.error(error);
      } catch {
        // already closed or errored
      }
      failRead?.(error);
      failRead = null;
      reader?.cancel().catch(() => {});
    },
    bound(limit) {
      if (deadline) clearTimeout(deadline);
      deadline = limit > 0 && !body.complete ? setTimeout(() => body.fail(bodyTimeout(limit)), limit * 1000) : null;
    },
  };
  body.bound(seconds);
  return body;
}

/**
 * The fetch Request for a parsed request, or the answer when it cannot be one: a Host that does
 * not parse (RFC 9112 section 3.2: 400), an HTTP/1.1 request without Host (ditto), a method a
 * Request cannot carry.
 */
function buildRequest(
  req: IncomingMessage,
  fallbackOrigin: string,
  handler: HttpHandler,
): { request: Request; abort: AbortController; body: ReadableStreamDefaultController<Uint8Array> | null } | Response {
  const method = req.method ?? "GET";
  const target = req.url ?? "/";
  const host = req.headers.host;
  let url: URL | null;
  if (!target.startsWith("/")) {
    // The absolute form (RFC 9112 section 3.2.2): its authority wins over Host.
    url = /^https?:\/\//i.test(target) ? URL.parse(target) : null;
    if (url === null) return renderError(new ApiError("invalid_request", "The request target is not a path or an absolute http URL (RFC 9112 section 3.2)."));
  } else if (host === undefined) {
    if (req.httpVersion !== "1.0") return renderError(new ApiError("invalid_request", "An HTTP/1.1 request needs a Host header (RFC 9112 section 3.2)."));
    url = URL.parse(target, fallbackOrigin);
    if (url === null) return renderError(new ApiError("invalid_request", "The request target is not a valid path."));
  } else {
    url = URL.parse(`http://${host}${target}`);
    if (url === null || url.host !== host.toLowerCase().replace(/:80$/, "")) {
      return renderError(new ApiError("invalid_request", "The Host header is not a valid host[:port] (RFC 9112 section 3.2)."));
    }
  }

  // RFC 9112 section 6.3: a request whose last transfer coding is not chunked has no knowable
  // length; answered at once (the parser would wait for body bytes first).
  const codings = req.headers["transfer-encoding"];
  if (codings !== undefined && !/(^|,)[ \t]*chunked[ \t]*$/i.test(codings)) {
    return renderError(
      new ApiError(
        "invalid_request",
        "The request body's framing is not valid: one Content-Length, or Transfer-Encoding: chunked with valid chunks (RFC 9112 section 6).",
      ),
    );
  }

  const headers = new Headers();
  const raw = req.rawHeaders;
  try {
    for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  } catch {
    return renderError(new ApiError("invalid_request", "A request header is not a valid field (RFC 9110 section 5)."));
  }

  const abort = new AbortController();
  let controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  const hasBody = method !== "GET" && method !== "HEAD" && (req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0);
  const body = hasBody
    ? new ReadableStream<Uint8Array>(
        {
          start(c) {
            controller = c;
            req.on("data", (chunk: Buffer) => {
              try {
                c.enqueue(chunk);
              } catch {
                return; // the stream was cancelled or errored: the rest is not read
              }
              if ((c.desiredSize ?? 0) <= 0) req.pause();
            });
            req.on("end", () => {
              try {
                c.close();
              } catch {
                // already errored (timeout) or cancelled
              }
            });
            req.on("error", () => {
              try {
                c.error(new ApiError("invalid_request", "The client closed the connection before it sent the whole request body."));
              } catch {
                // already closed
              }
            });
          },
          pull() {
            req.resume();
          },
          cancel() {
            // The handler wants no more of it (413): stop reading; the connection closes after the answer.
            req.pause();
          },
        },
        { highWaterMark: 4 },
      )
    : null;
  try {
    const request = new Request(url.href, { method, headers, body, signal: abort.signal, ...(body ? { duplex: "half" } : {}) } as RequestInit);
    return { request, abort, body: controller };
  } catch {
    // A method the Fetch standard forbids in a Request (CONNECT, TRACE, TRACK), or another the
    // handler has no route for: answered as any method without a route.
    return handler.refuseMethod(method, url.pathname);
  }
}

function bodyTimeout(seconds: number): ApiError {
  return new ApiError("request_timeout", `The request body did not all arrive within ${seconds} s of its headers; the connection is closed.`);
}

/** The JSON answer to a request the parser refused, by llhttp's error code. */
function refuseUnparsed(error: Error & { code?: string; rawPacket?: Buffer }, handler: HttpHandler): Response {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return renderError(
        new ApiError("headers_too_large", `The request line and headers are larger than ${MAX_HEADER_BYTES / 1024} KiB in all (RFC 6585 section 5).`),
      );
    case "HPE_INVALID_METHOD": {
      // The request line as sent: `get /path HTTP/1.1` or `FOO /path HTTP/1.1`.
      const line = /^([^ \r\n]*) ([^ \r\n]*) HTTP\/\d\.\d\r?\n/.exec(error.rawPacket?.toString("latin1") ?? "");
      const method = line?.[1] ?? "";
      const target = line?.[2] ?? "";
      if (TOKEN.test(method) && target.startsWith("/")) {
        if (method !== method.toUpperCase() && STANDARD_METHODS.has(method.toUpperCase())) {
          return renderError(
            new ApiError("invalid_request", `Methods are case-sensitive (RFC 9110 section 9.1): send ${method.toUpperCase()}, not ${method}.`),
          );
        }
        return handler.refuseMethod(method, URL.parse(target, "http://localhost")?.pathname ?? target);
      }
      return renderError(new ApiError("invalid_request", "The request line is not METHOD target HTTP/1.1 (RFC 9112 section 3)."));
    }
    case "HPE_INVALID_VERSION":
    case "HPE_INVALID_CONSTANT":
    case "HPE_INVALID_URL":
    case "HPE_STRICT":
    case "HPE_LF_EXPECTED":
    case "HPE_CR_EXPECTED":
      return renderError(
        new ApiError("invalid_request", "The request line is not METHOD target HTTP/1.1, with a target of URL characters (RFC 9112 section 3)."),
      );
    case "HPE_INVALID_HEADER_TOKEN":
      return renderError(new ApiError("invalid_request", "A request header is not name: value with a valid name and value (RFC 9112 section 5)."));
    case "HPE_INVALID_CONTENT_LENGTH":
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
    case "HPE_INVALID_TRANSFER_ENCODING":
    case "HPE_INVALID_CHUNK_SIZE":
      return renderError(
        new ApiError(
          "invalid_request",
          "The request body's framing is not valid: one Content-Length, or Transfer-Encoding: chunked with valid chunks (RFC 9112 section 6).",
        ),
      );
    default:
      return renderError(
        new ApiError(
          "invalid_request",
          `The request is not valid HTTP/1.1 (RFC 9112; the parser said: ${error.message.replace(/^Parse Error:?\s*/, "") || error.code}).`,
        ),
      );
  }
}

/** Writes `response` to a socket whose request could not be parsed, then closes it. */
async function rawAnswer(socket: Socket, response: Response): Promise<void> {
  const text = wholeBodyOf(response);
  const bytes = rawBytes(response, text !== null ? Buffer.from(text) : Buffer.from(await response.arrayBuffer()));
  if (!socket.writable) return void socket.destroy();
  socket.end(bytes);
}

/** The HTTP/1.1 message of `response` with `body`, closing its connection. */
function rawBytes(response: Response, body: Buffer): Buffer {
  let head = `HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ""}\r\n`;
  response.headers.forEach((value, name) => {
    if (name !== "content-length" && name !== "connection" && value !== "") head += `${name}: ${value}\r\n`;
  });
  head += `content-length: ${body.byteLength}\r\nconnection: close\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, "latin1"), body]);
}

/** A body of known length up to this size is read whole and sent at once (JSON answers, web app files). */
const WHOLE_BODY_BYTES = 1024 * 1024;

/**
 * Writes a fetch Response: a body of known length (lib/http/io.ts json() sets it) up to
 * WHOLE_BODY_BYTES at once; any other (SSE, a build's log, an artifact) as it comes, waiting for
 * the client to drain, so a slow reader holds no more than the socket's buffer. A request whose
 * body was not all read (refused early, timed out) ends its connection.
 */
async function writeResponse(req: IncomingMessage, res: ServerResponse, response: Response, state: SocketState, stopping: boolean): Promise<void> {
  state.answering = res;
  const headers: Record<string, string | string[]> = {};
  let length: string | null = null;
  let cookies = false;
  response.headers.forEach((value, name) => {
    if (name === "content-length") length = value;
    else if (name === "set-cookie") cookies = true;
    else headers[name] = value;
  });
  if (cookies) headers["set-cookie"] = response.headers.getSetCookie();
  const keepAlive = req.complete && !stopping;
  if (!keepAlive) headers.connection = "close";
  const closeAfter = () => {
    if (keepAlive) return;
    if (res.writableFinished) req.socket.destroy();
    else res.once("finish", () => req.socket.destroy());
  };

  if (req.method === "HEAD" || response.status === 204 || response.status === 304 || response.body === null) {
    await response.body?.cancel().catch(() => {});
    res.writeHead(response.status, length === null ? headers : { ...headers, "content-length": length });
    res.end();
    return closeAfter();
  }

  // A JSON answer (lib/http/io.ts json()): its text, written now.
  const text = wholeBodyOf(response);
  if (text !== null && length !== null) {
    headers["content-length"] = length;
    res.writeHead(response.status, headers);
    res.end(text);
    return closeAfter();
  }

  if (length !== null && Number(length) <= WHOLE_BODY_BYTES) {
    let whole: Buffer;
    try {
      whole = Buffer.from(await response.arrayBuffer());
    } catch {
      return void req.socket.destroy();
    }
    res.writeHead(response.status, { ...headers, "content-length": String(whole.byteLength) });
    res.end(whole);
    return closeAfter();
  }

  res.writeHead(response.status, length === null ? headers : { ...headers, "content-length": length });
  res.flushHeaders(); // an event stream's client learns at once that it is connected
  const reader = response.body.getReader();
  const closed = new Promise<"closed">((resolve) => res.once("close", () => resolve("closed")));
  try {
    for (;;) {
      const chunk = await Promise.race([reader.read(), closed.then(() => ({ done: true, value: undefined }) as const)]);
      if (chunk.done) break;
      if (
        !res.write(chunk.value) &&
        (await Promise.race([new Promise<"drained">((resolve) => res.once("drain", () => resolve("drained"))), closed])) === "closed"
      )
        break;
    }
    res.end();
  } catch {
    // The body failed half-way (a stream that errored): the client cannot be told more than a cut connection.
    req.socket.destroy();
  } finally {
    await reader.cancel().catch(() => {});
  }
  closeAfter();
}
