// The shape of one endpoint: its schemas (which both validate requests and generate the API
// document), the error codes it may answer, and its handler. Handler files export one of these;
// handlers/routes.ts gives each a method, a path and an auth rule.
import { z } from "zod";
import type { ErrorCode } from "./errors.ts";
import { IdParam } from "../schemas/shared.ts";
import type { AppContext, ContextFor, RequestContext } from "./context.ts";

/**
 * Who may call a route: the whole rule, on the route's line in handlers/routes.ts. The request
 * pipeline (lib/auth/authenticate.ts) enforces it before the handler runs; the API document's
 * security and 401/403/404 answers, docs/authorization.md and the authorization walk
 * (tests/handlers/authorization-matrix.test.ts) are all generated from it.
 * - public: anyone; the handler applies its own rule (e.g. loopback for local login);
 * - webhook: anyone may send; the receiver verifies the host's signature or token over the raw body;
 * - setup: the one-time setup token, only while setup is incomplete;
 * - session: a user session (not an API token), e.g. logout;
 * - user / maintainer / admin / owner: a session or an API token whose effective role is at least that;
 * - projectRole(minimum, via): a session or API token whose role on the project named (directly or
 *   through its pipeline, build, delivery or deployment) by the path parameter `via` is at least `minimum`;
 * - metrics: the scrape token (ROOST_METRICS_TOKEN) when configured, otherwise a loopback peer;
 * - runner: a runner token (roost_rt_…) of the runner named by the path's {runner_id};
 * - stream: a stream token (roost_st_…) in the `token` query parameter, for the path's {build_id} only,
 *   whose user still sees the build's project when the stream opens.
 */
export type InstanceRule = "user" | "maintainer" | "admin" | "owner";
export type AuthRule = "public" | "webhook" | "setup" | "session" | InstanceRule | "metrics" | "runner" | "stream" | ProjectRule;

export type ProjectRoleName = "viewer" | "developer" | "maintainer";
/** The path parameter that names the project, itself or through one of its resources. */
export type ProjectScopeParam = "project_id" | "pipeline_id" | "build_id" | "delivery_id" | "deployment_id";

export interface ProjectRule<Via extends ProjectScopeParam = ProjectScopeParam> {
  kind: "project";
  minimum: ProjectRoleName;
  via: Via;
}

/** The caller's project role must be at least `minimum` on the project `via` names. */
export function projectRole<Via extends ProjectScopeParam>(minimum: ProjectRoleName, via: Via): ProjectRule<Via> {
  return { kind: "project", minimum, via };
}

export function isProjectRule(rule: AuthRule): rule is ProjectRule {
  return typeof rule === "object";
}

/** The rule as one short phrase, for the API document and docs/authorization.md. */
export function describeRule(rule: AuthRule): string {
  if (isProjectRule(rule)) return `project ${rule.minimum}${rule.via === "project_id" ? "" : ` (of the ${rule.via.replace("_id", "")}'s project)`}`;
  return rule;
}

/** The error codes a rule itself may answer with, before the handler runs. */
export function ruleErrors(rule: AuthRule): ErrorCode[] {
  if (isProjectRule(rule)) return ["missing_auth", "wrong_credential", "invalid_session", "invalid_token", "forbidden", "not_found"];
  switch (rule) {
    case "public":
    case "webhook":
      return [];
    case "setup":
      return ["missing_auth", "wrong_credential", "invalid_setup_token", "setup_already_complete"];
    case "session":
      return ["missing_auth", "wrong_credential", "invalid_session"];
    case "user":
      return ["missing_auth", "wrong_credential", "invalid_session", "invalid_token"];
    case "maintainer":
    case "admin":
    case "owner":
      return ["missing_auth", "wrong_credential", "invalid_session", "invalid_token", "forbidden"];
    case "metrics":
      return ["missing_auth", "invalid_token", "forbidden"];
    case "runner":
    case "stream":
      return ["missing_auth", "wrong_credential", "invalid_token", "forbidden"];
  }
}

type AnyObject = z.ZodObject<z.ZodRawShape>;

/**
 * C is what the handler reads beyond the request (lib/http/context.ts ContextFor): a handler on a
 * `user` route takes `UserContext` and finds its principal there. The route table checks that its
 * line's rule provides it (handlers/routes.ts).
 */
export interface Endpoint<
  P extends AnyObject = AnyObject,
  Q extends AnyObject = AnyObject,
  B extends z.ZodType = z.ZodType,
  C extends RequestContext = RequestContext,
> {
  operationId: string;
  summary: string;
  description?: string;
  /** What the handler checks beyond the route's rule (a loopback peer, a token's owner), for docs/authorization.md. */
  authNote?: string;
  /**
   * The path parameters the handler reads or that are not plain ids. The route's path names them
   * all (handlers/routes.ts); any it names that this leaves out is an IdParam (withPathParams).
   */
  params?: P;
  query?: Q;
  /** When set, the body must be JSON of this shape (415/413/400 otherwise). */
  body?: B;
  /**
   * A check of the body's common shape, cheaper than the schema's parse, for a route whose bodies
   * are many and large (log batches): what the schema would make of the body when it plainly
   * fits, null to let the schema parse it (and word a refusal).
   */
  plainBody?: (value: unknown) => z.output<B> | null;
  bodyLimitBytes?: number;
  /** JSON response schema for the success status; omitted for streams and raw bodies. */
  response?: z.ZodType;
  successStatus?: number;
  /** Sign-in routes also set the session as the browser's HttpOnly cookie; logout clears it (lib/auth/browser-session.ts). */
  browserSession?: "set" | "clear";
  /** Extra response media types (e.g. text/plain logs, text/event-stream), documented as such. */
  produces?: string[];
  /** The error codes the handler itself may answer with; none when omitted. */
  errors?: ErrorCode[];
  /**
   * Reads the handler will need whoever the caller is, started from the path's raw parameters
   * beside the authentication's own read (on a remote database the two leave in one request);
   * the handler gets what this returns as `prefetched`, and decides after authorization what it
   * may use. Must not write, and must handle its own promises' rejections: a refused caller's
   * are never awaited.
   */
  prefetch?: (rawParams: Readonly<Record<string, string>>, ctx: AppContext) => unknown;
  /**
   * The handler only reads the database, and may run twice (GET, no body, no prefetch): a caller's
   * session or API token remembered by this daemon (lib/db/verified-reads.ts) is then taken without
   * the statement that asks whether anything was committed since, and the handler's own reads answer
   * that instead (lib/http/app.ts): if they saw a newer database, the credential is read again and
   * the handler runs again, so a revocation, a logout or a deactivation still refuses this request.
   * One statement fewer a request on bun:sqlite; nothing changes on a libSQL server.
   */
  readOnly?: boolean;
  /**
   * A runner route whose handler holds its runner's token in its own write batch
   * (Authentication.runnerStands, lib/auth/authenticate.ts): the runner is taken as this daemon
   * remembers it, without a read, and the handler confirms it by a read when its batch wrote nothing.
   * A function says so per request (before authentication: a request whose handler would read
   * first anyway reads its runner beside its other reads instead).
   */
  runnerInWrite?: boolean | ((rawParams: Readonly<Record<string, string>>, ctx: AppContext) => boolean);
  // A property, not a method, so that TypeScript compares the context strictly (strictFunctionTypes).
  handle: (input: { params: z.output<P>; query: z.output<Q>; body: z.output<B>; prefetched?: unknown }, ctx: C) => Promise<unknown>;
}

/**
 * The answer of an endpoint that creates something: 201 with the new resource under its name
 * (`...created({ schedule: ScheduleResource })` answers `{"schedule": …}`), or `schema` as it is.
 */
export function created(answer: z.ZodRawShape | z.ZodType): { response: z.ZodType; successStatus: 201 } {
  return { response: answer instanceof z.ZodType ? answer : z.object(answer), successStatus: 201 };
}

export function defineEndpoint<
  P extends AnyObject = AnyObject,
  Q extends AnyObject = AnyObject,
  B extends z.ZodType = z.ZodType,
  C extends RequestContext = RequestContext,
>(endpoint: Endpoint<P, Q, B, C>): Endpoint<P, Q, B, C> {
  return endpoint;
}

/** An endpoint a route with rule R may serve: its handler needs no more than R provides. */
// biome-ignore lint/suspicious/noExplicitAny: the schemas are checked in the endpoint file
export type EndpointFor<R extends AuthRule> = Endpoint<any, any, any, ContextFor<R>>;

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

// biome-ignore lint/suspicious/noExplicitAny: each endpoint's own types are checked on its route line
type AnyEndpoint = Endpoint<any, any, any, any>;

/**
 * The endpoint with a schema for every parameter its route's path names, in the path's order: an
 * IdParam unless the endpoint's own `params` says otherwise. A `params` member the path does not
 * name could never arrive, so it is a mistake in the route table or the handler, said at load.
 */
export function withPathParams<E extends AnyEndpoint>(path: string, endpoint: E): E {
  const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const declared: z.ZodRawShape = endpoint.params?.shape ?? {};
  const unknown = Object.keys(declared).filter((name) => !names.includes(name));
  if (unknown.length) throw new Error(`${endpoint.operationId}: params ${unknown.join(", ")} not in the path ${path}`);
  if (names.length === 0) return endpoint;
  return { ...endpoint, params: z.object(Object.fromEntries(names.map((name) => [name, declared[name] ?? IdParam]))) };
}

export interface RouteEntry {
  method: Method;
  /** OpenAPI-style path: /v1/api-tokens/{token_id} */
  path: string;
  auth: AuthRule;
  /** The API document's group for the route (its OpenAPI tag). */
  tag: string;
  /**
   * The endpoint, from its module imported on the route's first request (or by the API
   * document): a start does not build some 120 handlers' schemas that most runs never call.
   */
  load: () => Promise<AnyEndpoint>;
}

/** A route with its endpoint at hand, for what reads every endpoint (the API document, docs/authorization.md). */
export interface LoadedRoute extends Omit<RouteEntry, "load"> {
  endpoint: AnyEndpoint;
}

/** Every route with its endpoint: imports every handler module. */
export async function loadRoutes(routes: RouteEntry[]): Promise<LoadedRoute[]> {
  return Promise.all(routes.map(async ({ load, ...route }) => ({ ...route, endpoint: await load() })));
}
