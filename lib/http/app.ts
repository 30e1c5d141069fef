// The application: the route table on an itty-router, wrapped in the one pipeline every request
// goes through (authenticate → validate → handle → render). `createApp(ctx).fetch(request, peer)`
// is what the listener (lib/http/listener.ts) calls and what in-process tests call.
import { Router, type RouteEntry as IttyRouteEntry } from "itty-router";
import type { z } from "zod";
import type { AppContext, RequestContext } from "./context.ts";
import type { RouteEntry } from "./route.ts";
import { ApiError, databaseUnavailableError } from "./errors.ts";
import { DEFAULT_BODY_LIMIT_BYTES, json, parseWith, readJson, renderError } from "./io.ts";
import { authenticate, type Authentication } from "../auth/authenticate.ts";
import { diskFullError, isDiskFullError, recordDiskFull } from "../daemon/disk.ts";
import { isDatabaseUnreachable } from "../db/database.ts";
import { applyBrowserSession } from "../auth/browser-session.ts";
import { serveWebApp } from "../web/serve.ts";

export interface App {
  fetch(request: Request, peer: string | null, connection?: ConnectionControl): Promise<Response>;
  /** The answer to `method` on `pathname` when no route has it and it cannot be a fetch Request (`FOO`, TRACE): 405 with Allow, or 404. */
  refuseMethod(method: string, pathname: string): Response;
}

/** What the listener lets a request change about its own connection (lib/http/listener.ts). */
export interface ConnectionControl {
  /** Seconds without traffic before the connection is closed; 0 = never (SSE streams, long polls). */
  setIdleTimeout(seconds: number): void;
  /** Seconds, from now, for the rest of the request body to arrive; 0 = no bound (long uploads). */
  setBodyTimeout(seconds: number): void;
}

export interface RequestMeta {
  /** request.url, read once (Bun makes the string on each read). */
  url: string;
  peer: string | null;
  requestId: string;
  connection: ConnectionControl;
}

const NO_CONNECTION_CONTROL: ConnectionControl = { setIdleTimeout() {}, setBodyTimeout() {} };

export function toIttyPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ":$1");
}

/** A route as the app serves it: itty-router's compiled pattern and template, and the pipeline around its endpoint. */
interface Served {
  pattern: RegExp;
  /** The route template as itty-router writes it (`/v1/builds/:build_id`): the metrics label and log field. */
  template: string;
  serve(request: Request, params: Record<string, string>, meta: RequestMeta): Promise<Response>;
  /** Its requests counter's series by status, made on the first answer of each status. */
  counted: Map<number, { inc(): void }>;
}

/** Answers the app made whole (json() of a handler's result) with x-request-id and nosniff already among their headers. */
const stamped = new WeakSet<Response>();

export function createApp(ctx: AppContext, routes: RouteEntry[]): App {
  const requests = ctx.metrics.counter("roost_http_requests_total", "HTTP requests by method, route template and status.");
  // itty-router compiles each path to its pattern; the app looks a request up in them itself
  // (findRoute), without its fetch's URL, query object and properties set on every Request.
  const router = Router<Request, [RequestMeta]>();
  const served = new Map<string, Served[]>();
  const allowed = new Map<string, { pattern: RegExp; methods: string[] }>();

  for (const route of routes) {
    let loaded: Awaited<ReturnType<RouteEntry["load"]>> | null = null;
    const serve = async (request: Request, matched: Record<string, string>, meta: RequestMeta): Promise<Response> => {
      const endpoint = (loaded ??= readOnlyChecked(route, await route.load()));
      let rawParams: Record<string, string> = matched;
      if (matched !== NO_PARAMS) {
        rawParams = {};
        for (const k in matched) rawParams[k] = safeDecode(matched[k]!);
      }
      const prefetched = endpoint.prefetch?.(rawParams, ctx);
      const handle = async (auth: Authentication): Promise<unknown> => {
        // What the rule authenticated joins the context; the route table checked that it is what the handler reads (lib/http/context.ts ContextFor).
        const rc: RequestContext & Authentication = {
          ...ctx,
          ...auth,
          request,
          peer: meta.peer,
          requestId: meta.requestId,
          // The connection's own functions (they use no `this`), not two closures a request.
          setIdleTimeout: meta.connection.setIdleTimeout,
          setBodyTimeout: meta.connection.setBodyTimeout,
        };
        // No schema, no parse: a route without path parameters or a query reads {} (what z.object({}) made of anything).
        const params = endpoint.params ? parseWith(endpoint.params, rawParams, "path") : {};
        const query = endpoint.query ? parseQuery(endpoint.query, meta.url) : {};
        const body = endpoint.body ? parseBody(endpoint, await readJson(request, endpoint.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES)) : undefined;
        return endpoint.handle({ params, query, body, prefetched }, rc);
      };
      let auth = await authenticate(
        route.auth,
        request,
        ctx,
        meta.peer,
        rawParams,
        endpoint.readOnly === true ||
          ((typeof endpoint.runnerInWrite === "function" ? endpoint.runnerInWrite(rawParams, ctx) : endpoint.runnerInWrite === true) && "runner-in-write"),
      );
      let result: unknown;
      if (auth.unconfirmed === undefined) {
        if (auth.runnerStands === undefined) result = await handle(auth);
        else {
          // A runner taken as remembered, not read (runnerInWrite): a request refused before its
          // handler held the runner's row (a body not valid) is refused as one read first would be,
          // a revoked or rotated token with 401.
          try {
            result = await handle(auth);
          } catch (error) {
            await authenticate(route.auth, request, ctx, meta.peer, rawParams);
            throw error;
          }
        }
      } else {
        // The credential as remembered, not asked of the database first: its answer stands only if
        // the handler's own reads saw the database as it was when the credential was read, so a
        // revocation, a logout or a deactivation committed since refuses this very request.
        const taken = auth.unconfirmed;
        let answered = true;
        try {
          result = await handle(auth);
        } catch (error) {
          if (confirmed(taken)) throw error;
          answered = false;
        }
        if (!answered || !confirmed(taken)) {
          auth = await authenticate(route.auth, request, ctx, meta.peer, rawParams);
          result = await handle(auth);
        }
      }
      if (result instanceof Response) return result;
      // The headers every answer carries (finish) given at once, not set on the Response afterwards.
      const response = json(result, endpoint.successStatus ?? 200, { "x-request-id": meta.requestId, "x-content-type-options": "nosniff" });
      stamped.add(response);
      if (endpoint.browserSession) applyBrowserSession(endpoint.browserSession, result, request, ctx, response);
      return response;
    };
    router[route.method.toLowerCase() as "get"](toIttyPath(route.path), serve);
    const compiled = router.routes.at(-1)!;
    exactMatchOnly(compiled);
    const ofMethod = served.get(route.method) ?? [];
    ofMethod.push({ pattern: compiled[1], template: compiled[3] ?? route.path, serve, counted: new Map() });
    served.set(route.method, ofMethod);
    const key = route.path;
    const entry = allowed.get(key) ?? { pattern: pathPattern(route.path), methods: [] };
    entry.methods.push(route.method);
    allowed.set(key, entry);
  }

  // A path without parameters is one map lookup when no route before it in the table matches it
  // too (the table's order decides, as in itty-router's walk); every other path walks the patterns.
  const exact = new Map<string, Map<string, Served>>();
  for (const [method, ofMethod] of served) {
    const paths = new Map<string, Served>();
    ofMethod.forEach((route, i) => {
      const path = route.template;
      if (path.includes(":") || !route.pattern.test(path) || paths.has(path)) return;
      if (ofMethod.slice(0, i).some((earlier) => earlier.pattern.test(path))) return;
      paths.set(path, route);
    });
    exact.set(method, paths);
  }

  /**
   * Whether the database was as it was when a credential was taken from memory, by the reads made
   * since: at least one, and the last of them at the credential's data version (lib/db/database.ts
   * Db.lastRead). Versions only grow, so every read between saw that version too.
   */
  function confirmed(taken: NonNullable<Authentication["unconfirmed"]>): boolean {
    const last = ctx.db.lastRead?.();
    return last !== undefined && last.reads > taken.reads && last.version === taken.version;
  }

  function findRoute(method: string, pathname: string): { route: Served; params: Record<string, string> } | null {
    const route = exact.get(method)?.get(pathname);
    if (route) return { route, params: NO_PARAMS };
    for (const candidate of served.get(method) ?? []) {
      const match = candidate.pattern.exec(pathname);
      if (match) return { route: candidate, params: match.groups ?? {} };
    }
    return null;
  }

  /** Headers every answer carries, the request's line in the log and its count in the metrics. */
  function finish(response: Response, method: string, route: string, requestId: string, started: number, peer: string | null, served?: Served): Response {
    if (!stamped.has(response)) {
      response.headers.set("x-request-id", requestId);
      // Every answer is what its Content-Type says (JSON, SVG, text, an artifact): no browser sniffing.
      if (!response.headers.has("x-content-type-options")) response.headers.set("x-content-type-options", "nosniff");
    }
    if (served === undefined) requests.inc({ method, route, status: String(response.status) });
    else {
      let series = served.counted.get(response.status);
      if (series === undefined) served.counted.set(response.status, (series = requests.series({ method, route, status: String(response.status) })));
      series.inc();
    }
    ctx.log[response.status >= 500 ? "error" : "debug"]("request", {
      request_id: requestId,
      method,
      route,
      status: response.status,
      duration_ms: Math.round((performance.now() - started) * 10) / 10,
      peer,
    });
    return response;
  }

  return {
    refuseMethod(method: string, pathname: string): Response {
      // Metrics label only methods a client library would send; anything else is one label.
      return finish(notMatched(method, pathname, allowed), "other", "unmatched", crypto.randomUUID(), performance.now(), null);
    },
    async fetch(request: Request, peer: string | null, connection: ConnectionControl = NO_CONNECTION_CONTROL): Promise<Response> {
      const requestId = crypto.randomUUID();
      const started = performance.now();
      let template = "unmatched";
      let served: Served | undefined;
      let response: Response;
      try {
        const url = request.url;
        const pathname = pathnameOf(url);
        const found = findRoute(request.method, pathname);
        if (found) {
          served = found.route;
          template = served.template;
          response = await served.serve(request, found.params, { url, peer, requestId, connection });
        } else {
          response = (await serveWebApp(request)) ?? notMatched(request.method, pathname, allowed);
        }
      } catch (error) {
        if (error instanceof ApiError) {
          response = renderError(error);
        } else if (isDiskFullError(error)) {
          // SQLITE_FULL, ENOSPC or EDQUOT: the operator's problem, said as such (lib/daemon/disk.ts).
          recordDiskFull(ctx.metrics, ctx.clock.now());
          ctx.log.error("data directory disk full", { request_id: requestId, method: request.method, error });
          response = renderError(diskFullError());
        } else if (isDatabaseUnreachable(error)) {
          // sqld is down or unreachable: not this request's fault, and nothing a stack trace explains.
          ctx.log.warn("database unreachable", { request_id: requestId, method: request.method, error: String(error) });
          response = renderError(databaseUnavailableError());
        } else {
          ctx.log.error("unhandled error", { request_id: requestId, method: request.method, path: URL.parse(request.url)?.pathname ?? null, error });
          response = renderError(new ApiError("internal_error", `An unexpected error occurred; quote request id ${requestId} to the operator.`));
        }
      }
      // The route template, not the path, so ids and tokens never become metric labels or log fields.
      return finish(response, request.method, template, requestId, started, peer, served);
    },
  };
}

/**
 * An endpoint marked `readOnly` may be run again (lib/http/route.ts): only a GET without a body or
 * a prefetch is, and a mark elsewhere is a mistake in the handler, said on its route's first request.
 */
function readOnlyChecked<E extends Awaited<ReturnType<RouteEntry["load"]>>>(route: RouteEntry, endpoint: E): E {
  if (endpoint.readOnly && (route.method !== "GET" || endpoint.body || endpoint.prefetch))
    throw new Error(`${endpoint.operationId}: readOnly is for a GET without a body or a prefetch`);
  return endpoint;
}

/** The body as the endpoint's schema parses it, by its plain check first where it has one. */
function parseBody(endpoint: Awaited<ReturnType<RouteEntry["load"]>>, value: unknown): unknown {
  const plain = endpoint.plainBody?.(value);
  return plain !== undefined && plain !== null ? plain : parseWith(endpoint.body!, value, "body");
}

/**
 * The parsed query of each schema for a request with none, made once: most requests of a list
 * send no query, and its defaults are the same every time. Each request gets its own copy.
 */
const emptyQueries = new WeakMap<z.ZodType, Record<string, unknown>>();

function parseQuery(schema: z.ZodType, url: string): unknown {
  if (url.includes("?")) return parseWith(schema, queryObject(url), "query");
  let parsed = emptyQueries.get(schema);
  if (parsed === undefined) {
    parsed = parseWith(schema, {}, "query") as Record<string, unknown>;
    emptyQueries.set(schema, parsed);
  }
  return { ...parsed };
}

/** Repeated query parameters arrive as arrays, which the schemas refuse as not being a single value. */
function queryObject(url: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of new URL(url).searchParams) {
    const seen = out[key];
    out[key] = seen === undefined ? value : ([] as string[]).concat(seen, value);
  }
  return out;
}

/** The parameters of a path that has none, shared. */
const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/**
 * The path of an absolute URL as the WHATWG URL parser gives it, read from the string itself when
 * it is a plain path (the characters of a route, none that parsing would change: no percent
 * escapes, dot segments or backslashes); any other is parsed. One URL object a request fewer.
 */
function pathnameOf(url: string): string {
  const scheme = url.indexOf("://");
  // A backslash ends the authority of an http URL as / does: such a URL is parsed.
  const start = scheme === -1 || url.includes("\\") ? -1 : url.indexOf("/", scheme + 3);
  if (start !== -1) {
    let end = url.length;
    for (let i = start; i < url.length; i++) {
      const c = url.charCodeAt(i);
      if (c === 0x3f || c === 0x23) {
        end = i; // ? or #
        break;
      }
      if (!PLAIN_PATH[c]) return new URL(url).pathname;
    }
    const path = url.slice(start, end);
    if (!path.includes("/.")) return path;
  }
  return new URL(url).pathname;
}

/** Path characters the URL parser keeps as they are: letters, digits, / - _ . ~ and : @ ! $ & ' ( ) * + , ; = */
const PLAIN_PATH: boolean[] = Array.from({ length: 128 }, (_, c) => /[A-Za-z0-9/\-_.~:@!$&'()*+,;=]/.test(String.fromCharCode(c)));

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

function pathPattern(path: string): RegExp {
  return new RegExp("^" + path.replace(/[.]/g, "\\.").replace(/\{\w+\}/g, "[^/]+") + "$");
}

/**
 * itty-router lets any number of trailing slashes follow a route's path (its patterns end in
 * `/*$`). Roost serves each route at its exact path only: `/v1/builds/b1/logs/stream/` is 404, so
 * a URL that slips past a proxy's exact `location` for the stream (where its ?token= is kept out of
 * the access log) never reaches the stream (docs/operations.md, "TLS with nginx").
 */
function exactMatchOnly(entry: IttyRouteEntry): void {
  const pattern = entry[1];
  const trailing = /\\?\/\*\$$/.exec(pattern.source);
  if (trailing) entry[1] = new RegExp(pattern.source.slice(0, trailing.index) + "$", pattern.flags);
}

function notMatched(method: string, pathname: string, allowed: Map<string, { pattern: RegExp; methods: string[] }>): Response {
  const methods = new Set<string>();
  for (const entry of allowed.values()) if (entry.pattern.test(pathname)) entry.methods.forEach((m) => methods.add(m));
  if (methods.size > 0) {
    const allow = [...methods].join(", ");
    return renderError(new ApiError("method_not_allowed", `${method} is not allowed on ${pathname}; use ${allow}.`, { headers: { allow } }));
  }
  return renderError(new ApiError("not_found", `No endpoint at ${method} ${pathname}.`));
}
