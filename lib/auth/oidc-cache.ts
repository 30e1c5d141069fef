// What one app remembers about identity providers (lib/auth/oidc.ts). A file of its own so that a
// daemon makes its empty cache at start without evaluating the OpenID client and its libraries
// (oauth4webapi, jose), which load with the first route that signs someone in or checks a
// provider (docs/benchmarks.md, "idle RSS").
import type * as oauth from "oauth4webapi";

/** The provider's metadata, with the endpoints Roost needs checked present. */
export type Discovery = oauth.AuthorizationServer & { authorization_endpoint: string; token_endpoint: string; jwks_uri: string };

/**
 * What one app remembers about identity providers (on AppContext, so each app and each test has
 * its own): discovery documents for 10 minutes, and per issuer its key set in oauth4webapi's
 * exported form with the time of the last refetch a failed signature forced. Failures are never cached.
 */
export interface OidcCache {
  discovery: Map<string, { discovery: Discovery; until: number }>;
  keys: Map<string, { jwks_uri: string; jwks: oauth.JWKSCacheInput; forced_refetch_at: number | null }>;
}

export function createOidcCache(): OidcCache {
  return { discovery: new Map(), keys: new Map() };
}
