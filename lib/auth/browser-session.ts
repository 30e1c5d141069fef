// Browser sessions (docs/web-app.md "Security"): the sign-in routes also set the session as an
// HttpOnly, SameSite=Strict cookie, so the web app never holds the token where a page script could
// read it. A bearer token in the Authorization header always wins and works exactly as without
// the cookie; the cookie is read only when a request has no Authorization header.
//
// CSRF: a cookie rides along on any request the browser sends, so a state-changing request
// authenticated by the cookie must also (1) carry `X-Roost-CSRF: 1`, a custom header that a form or
// a cross-origin page cannot send without a CORS preflight, which Roost never grants, and (2) when
// the browser names its Origin (or Sec-Fetch-Site), come from this origin. SameSite=Strict already
// keeps the cookie off cross-site requests; the header covers same-site siblings and old browsers
// (OWASP CSRF Prevention Cheat Sheet, "Custom Request Headers" and "Verifying Origin").
import type { AppContext } from "../http/context.ts";
import { fail } from "../http/errors.ts";
import { credentialKind, describeCredential } from "./credential-kind.ts";

export const SESSION_COOKIE = "roost_session";
export const CSRF_HEADER = "x-roost-csrf";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The session token the cookie carries, or null. Refuses a cookie-authenticated unsafe request without the CSRF proofs. */
export function cookieSessionToken(request: Request, ctx: AppContext): string | null {
  const header = request.headers.get("cookie");
  if (header === null) return null;
  const token = new Bun.CookieMap(header).get(SESSION_COOKIE);
  if (!token) return null;
  // The cookie is set by sign-in only, so it carries a session and nothing else: an API token
  // planted in it (by a script on a sibling subdomain, or pasted by hand) is refused, never used.
  if (credentialKind(token) !== "sess") {
    fail(
      "wrong_credential",
      `The ${SESSION_COOKIE} cookie carries a user session only, not ${describeCredential(token)}; send other credentials as 'Authorization: Bearer <token>'.`,
    );
  }
  if (!SAFE_METHODS.has(request.method)) checkCsrf(request, ctx);
  return token;
}

function checkCsrf(request: Request, ctx: AppContext): void {
  if (request.headers.get(CSRF_HEADER) !== "1") {
    fail("csrf_refused", "A request signed in by the browser session cookie must send the header 'X-Roost-CSRF: 1'.");
  }
  if (request.headers.get("sec-fetch-site") === "cross-site") fail("csrf_refused", "A cross-site request cannot use the browser session.");
  const origin = request.headers.get("origin");
  if (origin !== null && !ownOrigins(request, ctx).has(origin)) {
    fail("csrf_refused", "The request's Origin is not this Roost, so the browser session cannot be used.");
  }
}

/** The origins this daemon is reached at: the Host the request names, and ROOST_PUBLIC_URL behind a proxy. */
function ownOrigins(request: Request, ctx: AppContext): Set<string> {
  const origins = new Set<string>([new URL(request.url).origin]);
  if (ctx.config.publicUrl) origins.add(new URL(ctx.config.publicUrl).origin);
  return origins;
}

/** Whether the browser reached this daemon over https (directly, or through ROOST_PUBLIC_URL's proxy). */
function isHttps(request: Request, ctx: AppContext): boolean {
  return new URL(request.url).protocol === "https:" || (ctx.config.publicUrl?.startsWith("https:") ?? false);
}

/** Set-Cookie for a new session; Max-Age ends it with the session itself. */
export function sessionCookie(request: Request, ctx: AppContext, token: string, expiresAt: number): string {
  const maxAge = Math.max(0, expiresAt - ctx.clock.now());
  return new Bun.Cookie(SESSION_COOKIE, token, { httpOnly: true, sameSite: "strict", secure: isHttps(request, ctx), path: "/", maxAge }).serialize();
}

/** Set-Cookie that removes the session cookie (logout). */
export function clearedSessionCookie(request: Request, ctx: AppContext): string {
  return new Bun.Cookie(SESSION_COOKIE, "", { httpOnly: true, sameSite: "strict", secure: isHttps(request, ctx), path: "/", maxAge: 0 }).serialize();
}

/** What a route does to the browser session cookie after it succeeds (lib/http/route.ts Endpoint.browserSession). */
export function applyBrowserSession(kind: "set" | "clear", result: unknown, request: Request, ctx: AppContext, response: Response): void {
  if (kind === "clear") {
    response.headers.append("set-cookie", clearedSessionCookie(request, ctx));
    return;
  }
  const session = result as { session_token?: unknown; expires_at?: unknown };
  if (typeof session.session_token === "string" && typeof session.expires_at === "number") {
    response.headers.append("set-cookie", sessionCookie(request, ctx, session.session_token, session.expires_at));
  }
}
