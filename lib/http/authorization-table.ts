// docs/authorization.md's table of who may call what, generated from the route table so the
// document cannot drift from what the request pipeline enforces (`npm run docs` rewrites it;
// tests/handlers/authorization-doc.test.ts fails when it is stale).
import { describeRule, type LoadedRoute } from "./route.ts";

export const TABLE_START = "<!-- generated from handlers/routes.ts by `npm run docs`: do not edit by hand -->";
export const TABLE_END = "<!-- end of generated table -->";

const RULE_TEXT: Record<string, string> = {
  public: "public",
  webhook: "the host's signature or token over the raw body",
  setup: "the setup token, only while setup is incomplete",
  session: "a user session (not an API token)",
  user: "any user",
  maintainer: "maintainer",
  admin: "admin",
  owner: "owner",
  metrics: "`ROOST_METRICS_TOKEN` as bearer when set; otherwise loopback peers only",
  runner: "the runner's own token (`{runner_id}` must be its runner)",
  stream: "a stream token for this build (`?token=`)",
};

export function authorizationTable(routes: LoadedRoute[]): string {
  const rows = routes.map(({ method, path, auth, endpoint }) => {
    const rule = typeof auth === "object" ? describeRule(auth) : RULE_TEXT[auth]!;
    return `| \`${method} ${path}\` | ${rule}${endpoint.authNote ? `; ${endpoint.authNote}` : ""} | ${endpoint.summary} |`;
  });
  return [TABLE_START, "", "| route | who may call it | what it does |", "|---|---|---|", ...rows, "", TABLE_END].join("\n");
}

/** `doc` with its generated table replaced by a fresh one. */
export function withFreshTable(doc: string, routes: LoadedRoute[]): string {
  const start = doc.indexOf(TABLE_START);
  const end = doc.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error("docs/authorization.md has no generated-table markers");
  return doc.slice(0, start) + authorizationTable(routes) + doc.slice(end + TABLE_END.length);
}
