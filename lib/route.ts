// The shape of one endpoint: its schemas (which both validate requests and generate the API
// document), the error codes it may answer, and its handler. Handler files export one of these;
// handlers/routes.ts gives each a method, a path and an auth rule.
import type { z } from "zod";
import type { ErrorCode } from "./errors.ts";
import type { RequestContext } from "./context.ts";

/**
 * Who may call a route (docs/authorization.md):
 * - public: anyone; the handler applies its own rule (e.g. loopback for local login);
 * - setup: the one-time setup token, only while setup is incomplete;
 * - session: a user session (not an API token), e.g. logout;
 * - user / maintainer / admin / owner: a session or an API token whose effective role is at least that;
 * - metrics: the scrape token (ROOST_METRICS_TOKEN) when configured, otherwise a loopback peer;
 * - runner: a runner token (roost_rt_…) of the runner named by the path's {runner_id};
 * - stream: a stream token (roost_st_…) in the `token` query parameter, for the path's {build_id} only,
 *   whose user still sees the build's project when the stream opens.
 */
export type AuthRule = "public" | "setup" | "session" | "user" | "maintainer" | "admin" | "owner" | "metrics" | "runner" | "stream";

type AnyObject = z.ZodObject<z.ZodRawShape>;

export interface Endpoint<
  P extends AnyObject = AnyObject,
  Q extends AnyObject = AnyObject,
  B extends z.ZodType = z.ZodType,
> {
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  params?: P;
  query?: Q;
  /** When set, the body must be JSON of this shape (415/413/400 otherwise). */
  body?: B;
  bodyLimitBytes?: number;
  /** JSON response schema for the success status; omitted for streams and raw bodies. */
  response?: z.ZodType;
  successStatus?: number;
  /** Extra response media types (e.g. text/plain logs, text/event-stream), documented as such. */
  produces?: string[];
  errors: ErrorCode[];
  handle(
    input: { params: z.output<P>; query: z.output<Q>; body: z.output<B> },
    ctx: RequestContext,
  ): Promise<unknown>;
}

export function defineEndpoint<P extends AnyObject = AnyObject, Q extends AnyObject = AnyObject, B extends z.ZodType = z.ZodType>(
  endpoint: Endpoint<P, Q, B>,
): Endpoint<P, Q, B> {
  return endpoint;
}

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface RouteEntry {
  method: Method;
  /** OpenAPI-style path: /v1/api-tokens/{token_id} */
  path: string;
  auth: AuthRule;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  endpoint: Endpoint<any, any, any>;
}
