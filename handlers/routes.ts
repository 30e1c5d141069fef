// The map of the whole API: one line a route, grouped by resource, with the auth rule of each
// (lib/route.ts AuthRule, docs/authorization.md). Nothing else registers a route, and the API
// document (GET /v1/openapi.json) is generated from this table.
import type { RouteEntry } from "../lib/route.ts";
import { buildOpenApiDocument } from "../lib/openapi.ts";

import * as openapi from "./meta/openapi.ts";
import * as healthz from "./meta/healthz.ts";
import * as readyz from "./meta/readyz.ts";
import * as metrics from "./meta/metrics.ts";
import * as setupStatus from "./setup/status.ts";
import * as setupPreferences from "./setup/preferences.ts";
import * as setupOwner from "./setup/owner.ts";
import * as setupComplete from "./setup/complete.ts";
import * as localLogin from "./auth/local-login.ts";
import * as logout from "./auth/logout.ts";
import * as usersMe from "./users/me.ts";
import * as usersList from "./users/list.ts";
import * as usersInvite from "./users/invite.ts";
import * as usersUpdate from "./users/update.ts";
import * as usersDeactivate from "./users/deactivate.ts";
import * as tokensList from "./api-tokens/list.ts";
import * as tokensCreate from "./api-tokens/create.ts";
import * as tokensRevoke from "./api-tokens/revoke.ts";

const r = (method: RouteEntry["method"], path: string, auth: RouteEntry["auth"], mod: { endpoint: RouteEntry["endpoint"] }): RouteEntry => ({
  method,
  path,
  auth,
  endpoint: mod.endpoint,
});

export const routes: RouteEntry[] = [
  // meta
  r("GET", "/v1/openapi.json", "public", openapi),
  r("GET", "/healthz", "public", healthz),
  r("GET", "/readyz", "public", readyz),
  r("GET", "/metrics", "metrics", metrics),

  // first-run setup (README "First run")
  r("GET", "/v1/setup/status", "public", setupStatus),
  r("POST", "/v1/setup/preferences", "setup", setupPreferences),
  r("POST", "/v1/setup/owner", "setup", setupOwner),
  r("POST", "/v1/setup/complete", "setup", setupComplete),

  // authentication (spec §4 "Authentication endpoints")
  r("POST", "/v1/auth/local/login", "public", localLogin),
  r("POST", "/v1/auth/logout", "session", logout),

  // users
  r("GET", "/v1/users/me", "user", usersMe),
  r("GET", "/v1/users", "admin", usersList),
  r("POST", "/v1/users", "admin", usersInvite),
  r("PATCH", "/v1/users/{user_id}", "admin", usersUpdate),
  r("DELETE", "/v1/users/{user_id}", "admin", usersDeactivate),

  // API tokens (spec §4 "Tokens")
  r("GET", "/v1/api-tokens", "user", tokensList),
  r("POST", "/v1/api-tokens", "user", tokensCreate),
  r("DELETE", "/v1/api-tokens/{token_id}", "user", tokensRevoke),
];

let document: Record<string, unknown> | null = null;
export function openApiDocument(): Record<string, unknown> {
  return (document ??= buildOpenApiDocument(routes));
}
