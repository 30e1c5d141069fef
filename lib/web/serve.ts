// Serving the web app (docs/web-app.md): any GET outside the API that no route answers is the app.
// A file under /assets/ is served as built; every other path is a client-side route (a deep link
// such as /projects/p1/builds/b2), answered with index.html, so a reload anywhere works.
import { webAssets, type WebAsset } from "./assets.ts";

/**
 * Headers of every app response. The policy allows this origin's own scripts and styles only (no
 * inline script, no eval, no third party), connections to this origin (the API and its SSE
 * stream), and no framing at all (clickjacking; CSP Level 3 frame-ancestors, with X-Frame-Options
 * for older browsers). Referrer-Policy keeps an OIDC code in the callback URL out of Referer.
 */
export const APP_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; "),
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

/** Paths the app never claims: the API, and the operational endpoints of the route table. */
function isApiPath(pathname: string): boolean {
  return pathname === "/v1" || pathname.startsWith("/v1/") || pathname === "/healthz" || pathname === "/readyz" || pathname === "/metrics";
}

/** The app's answer to a request no route matched, or null when it is not the app's to answer. */
export async function serveWebApp(request: Request): Promise<Response | null> {
  if (request.method !== "GET" && request.method !== "HEAD") return null;
  const { pathname } = new URL(request.url);
  if (isApiPath(pathname)) return null;
  const assets = await webAssets();
  const asset = pathname.startsWith("/assets/") ? assets.get(pathname) : assets.get("/index.html");
  if (!asset) return null;
  return respond(asset, request.method === "HEAD");
}

function respond(asset: WebAsset, head: boolean): Response {
  return new Response(head ? null : asset.body, {
    status: 200,
    headers: {
      "content-type": asset.type,
      "content-length": String(asset.body.byteLength),
      "cache-control": asset.immutable ? "public, max-age=31536000, immutable" : "no-cache",
      ...APP_SECURITY_HEADERS,
    },
  });
}
