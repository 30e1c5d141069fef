// Every answer a handler test receives is checked against what the API document promises: the
// matched route's response schema for its success status, the error schema for a JSON error. A
// mismatch fails the test that received it, so the document cannot drift from the behaviour.
import { z } from "zod";
import { routes } from "../../handlers/routes.ts";
import { ErrorBody } from "../../lib/http/openapi.ts";
import { loadRoutes, type LoadedRoute } from "../../lib/http/route.ts";

const matchers = (await loadRoutes(routes)).map((route) => ({
  route,
  pattern: new RegExp(`^${route.path.replace(/[.]/g, "\\.").replace(/\{\w+\}/g, "[^/]+")}$`),
}));

function matchedRoute(method: string, pathname: string): LoadedRoute | null {
  return matchers.find((m) => m.route.method === method && m.pattern.test(pathname))?.route ?? null;
}

/** Throws when a JSON answer does not match the schema the API document gives it. */
export function checkResponseSchema(method: string, path: string, status: number, contentType: string | null, body: unknown): void {
  if (!contentType?.startsWith("application/json") || body === undefined) return;
  const pathname = new URL(path, "http://in-process").pathname;
  const route = matchedRoute(method, pathname);
  let schema: z.ZodType | undefined;
  if (status >= 400) schema = ErrorBody;
  else if (route && status === (route.endpoint.successStatus ?? 200)) schema = route.endpoint.response;
  if (!schema) return;
  const result = schema.safeParse(body);
  if (!result.success) {
    throw new Error(
      `${method} ${pathname} answered ${status} with a body its schema refuses: ${z.prettifyError(result.error)}\n${JSON.stringify(body).slice(0, 2000)}`,
    );
  }
}
