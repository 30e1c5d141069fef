// The map of the whole API: one line a route, with the auth rule of each, grouped by resource under
// the API document's tags (lib/http/route.ts AuthRule, docs/authorization.md). Nothing else
// registers a route, and the API document (GET /v1/openapi.json) is generated from this table.
import { loadRoutes, projectRole, withPathParams, type AuthRule, type EndpointFor, type RouteEntry } from "../lib/http/route.ts";

// Each line names its handler module, imported on the route's first request (lib/http/route.ts
// RouteEntry.load), so a start builds no handler's schemas. The rule decides what the handler
// finds in its context (lib/http/context.ts ContextFor): a handler that reads more than its
// line's rule provides does not compile. The path names the parameters: a handler states only
// those it reads or that are not plain ids (lib/http/route.ts withPathParams).
const r = <Rule extends AuthRule>(
  method: RouteEntry["method"],
  path: string,
  auth: Rule,
  module: () => Promise<{ endpoint: EndpointFor<NoInfer<Rule>> }>,
): Omit<RouteEntry, "tag"> => ({
  method,
  path,
  auth,
  load: async () => withPathParams(path, (await module()).endpoint),
});
/** A group of routes the API document lists under one tag. */
const tagged = (tag: string, group: Omit<RouteEntry, "tag">[]): RouteEntry[] => group.map((route) => ({ ...route, tag }));

export const routes: RouteEntry[] = [
  ...tagged("meta", [
    r("GET", "/v1/openapi.json", "public", () => import("./meta/openapi.ts")),
    r("GET", "/v1/schemas/pipeline-file.json", "public", () => import("./schemas/pipeline-file.ts")),
    r("GET", "/healthz", "public", () => import("./meta/healthz.ts")),
    r("GET", "/readyz", "public", () => import("./meta/readyz.ts")),
    r("GET", "/metrics", "metrics", () => import("./meta/metrics.ts")),
  ]),

  // first-run setup (README "First run")
  ...tagged("setup", [
    r("GET", "/v1/setup/status", "public", () => import("./setup/status.ts")),
    r("POST", "/v1/setup/preferences", "setup", () => import("./setup/preferences.ts")),
    r("POST", "/v1/setup/owner", "setup", () => import("./setup/owner.ts")),
    r("PUT", "/v1/setup/oidc", "setup", () => import("./setup/oidc.ts")),
    r("PUT", "/v1/setup/trusted-proxy", "setup", () => import("./setup/trusted-proxy.ts")),
    r("POST", "/v1/setup/complete", "setup", () => import("./setup/complete.ts")),
  ]),

  // authentication (docs/api.md "Authentication")
  ...tagged("auth", [
    r("POST", "/v1/auth/local/login", "public", () => import("./auth/local-login.ts")),
    r("GET", "/v1/auth/oidc/start", "public", () => import("./auth/oidc-start.ts")),
    r("POST", "/v1/auth/oidc/callback", "public", () => import("./auth/oidc-callback.ts")),
    r("POST", "/v1/auth/trusted-proxy/login", "public", () => import("./auth/trusted-proxy-login.ts")), // trusted peer + proxy headers
    r("POST", "/v1/auth/logout", "session", () => import("./auth/logout.ts")),
  ]),

  // External Access sign-in settings (docs/external-access.md); secrets are never returned
  ...tagged("settings", [
    r("GET", "/v1/settings/oidc", "admin", () => import("./settings/oidc-get.ts")),
    r("PUT", "/v1/settings/oidc", "admin", () => import("./settings/oidc-update.ts")),
    r("GET", "/v1/settings/trusted-proxy", "admin", () => import("./settings/trusted-proxy-get.ts")),
    r("PUT", "/v1/settings/trusted-proxy", "admin", () => import("./settings/trusted-proxy-update.ts")),
    r("PUT", "/v1/settings/runtime-mode", "owner", () => import("./settings/runtime-mode-update.ts")), // after setup: Local Only <-> External Access
  ]),

  ...tagged("users", [
    r("GET", "/v1/users/me", "user", () => import("./users/me.ts")),
    r("GET", "/v1/users", "admin", () => import("./users/list.ts")),
    r("POST", "/v1/users", "admin", () => import("./users/invite.ts")),
    r("PATCH", "/v1/users/{user_id}", "admin", () => import("./users/update.ts")),
    r("DELETE", "/v1/users/{user_id}", "admin", () => import("./users/deactivate.ts")),
  ]),

  // API tokens (docs/api.md "API tokens")
  ...tagged("api-tokens", [
    r("GET", "/v1/api-tokens", "user", () => import("./api-tokens/list.ts")),
    r("POST", "/v1/api-tokens", "user", () => import("./api-tokens/create.ts")),
    r("DELETE", "/v1/api-tokens/{token_id}", "user", () => import("./api-tokens/revoke.ts")),
  ]),

  // source integrations and the repository catalogue
  ...tagged("integrations", [
    r("POST", "/v1/integrations", "admin", () => import("./integrations/create.ts")),
    r("GET", "/v1/integrations", "maintainer", () => import("./integrations/list.ts")),
    r("POST", "/v1/integrations/{integration_id}/sync", "admin", () => import("./integrations/sync.ts")),
    r("DELETE", "/v1/integrations/{integration_id}", "admin", () => import("./integrations/delete.ts")),
    r("GET", "/v1/integration-repositories", "maintainer", () => import("./integration-repositories/list.ts")),
  ]),

  // projects: projectRole(minimum, param) is checked on the project the param names (lib/auth/project-access.ts)
  ...tagged("projects", [
    r("POST", "/v1/projects", "maintainer", () => import("./projects/create.ts")),
    r("GET", "/v1/projects", "user", () => import("./projects/list.ts")),
    r("GET", "/v1/projects/{project_id}", projectRole("viewer", "project_id"), () => import("./projects/get.ts")),
    r("PATCH", "/v1/projects/{project_id}", projectRole("maintainer", "project_id"), () => import("./projects/update.ts")),
    r("DELETE", "/v1/projects/{project_id}", projectRole("maintainer", "project_id"), () => import("./projects/delete.ts")),
    r("GET", "/v1/projects/{project_id}/members", projectRole("viewer", "project_id"), () => import("./project-members/list.ts")),
    r("PUT", "/v1/projects/{project_id}/members/{user_id}", projectRole("maintainer", "project_id"), () => import("./project-members/set.ts")),
    r("DELETE", "/v1/projects/{project_id}/members/{user_id}", projectRole("maintainer", "project_id"), () => import("./project-members/remove.ts")),
  ]),

  ...tagged("pipelines", [
    r("POST", "/v1/projects/{project_id}/pipelines", projectRole("maintainer", "project_id"), () => import("./pipelines/create.ts")),
    r("GET", "/v1/projects/{project_id}/pipelines", projectRole("viewer", "project_id"), () => import("./pipelines/list.ts")),
    r("GET", "/v1/projects/{project_id}/pipeline-file", projectRole("viewer", "project_id"), () => import("./projects/pipeline-file.ts")), // roost.yaml at the default branch's head
    r("GET", "/v1/pipelines/{pipeline_id}", projectRole("viewer", "pipeline_id"), () => import("./pipelines/get.ts")),
    r("PATCH", "/v1/pipelines/{pipeline_id}", projectRole("maintainer", "pipeline_id"), () => import("./pipelines/update.ts")),
    r("DELETE", "/v1/pipelines/{pipeline_id}", projectRole("maintainer", "pipeline_id"), () => import("./pipelines/delete.ts")),
  ]),

  // build schedules (docs/operations.md "Scheduled builds")
  ...tagged("schedules", [
    r("POST", "/v1/pipelines/{pipeline_id}/schedules", projectRole("maintainer", "pipeline_id"), () => import("./schedules/create.ts")),
    r("GET", "/v1/pipelines/{pipeline_id}/schedules", projectRole("viewer", "pipeline_id"), () => import("./schedules/list.ts")),
    r("GET", "/v1/pipelines/{pipeline_id}/schedules/{schedule_id}", projectRole("viewer", "pipeline_id"), () => import("./schedules/get.ts")),
    r("PATCH", "/v1/pipelines/{pipeline_id}/schedules/{schedule_id}", projectRole("maintainer", "pipeline_id"), () => import("./schedules/update.ts")),
    r("DELETE", "/v1/pipelines/{pipeline_id}/schedules/{schedule_id}", projectRole("maintainer", "pipeline_id"), () => import("./schedules/delete.ts")),
  ]),

  // variables and secrets (docs/secrets.md): secret values are write-only, changes are recorded
  ...tagged("variables", [
    r("GET", "/v1/projects/{project_id}/variables", projectRole("maintainer", "project_id"), () => import("./variables/project-list.ts")),
    r("PUT", "/v1/projects/{project_id}/variables/{key}", projectRole("maintainer", "project_id"), () => import("./variables/project-put.ts")),
    r("DELETE", "/v1/projects/{project_id}/variables/{key}", projectRole("maintainer", "project_id"), () => import("./variables/project-delete.ts")),
    r("GET", "/v1/pipelines/{pipeline_id}/variables", projectRole("maintainer", "pipeline_id"), () => import("./variables/pipeline-list.ts")),
    r("PUT", "/v1/pipelines/{pipeline_id}/variables/{key}", projectRole("maintainer", "pipeline_id"), () => import("./variables/pipeline-put.ts")),
    r("DELETE", "/v1/pipelines/{pipeline_id}/variables/{key}", projectRole("maintainer", "pipeline_id"), () => import("./variables/pipeline-delete.ts")),
    r("GET", "/v1/projects/{project_id}/variable-changes", projectRole("maintainer", "project_id"), () => import("./variables/changes.ts")),
  ]),

  ...tagged("builds", [
    r("POST", "/v1/projects/{project_id}/builds", projectRole("developer", "project_id"), () => import("./builds/create.ts")),
    r("GET", "/v1/projects/{project_id}/builds", projectRole("viewer", "project_id"), () => import("./builds/list.ts")),
    r("GET", "/v1/pipelines/{pipeline_id}/builds", projectRole("viewer", "pipeline_id"), () => import("./builds/list-for-pipeline.ts")),
    r("GET", "/v1/builds/{build_id}", projectRole("viewer", "build_id"), () => import("./builds/get.ts")),
    r("POST", "/v1/builds/{build_id}/rerun", projectRole("developer", "build_id"), () => import("./builds/rerun.ts")),
    r("POST", "/v1/builds/{build_id}/cancel", projectRole("developer", "build_id"), () => import("./builds/cancel.ts")),
    r("GET", "/v1/builds/{build_id}/artifacts", projectRole("viewer", "build_id"), () => import("./builds/artifacts-list.ts")),
    r("GET", "/v1/builds/{build_id}/artifacts/{artifact_id}", projectRole("viewer", "build_id"), () => import("./builds/artifact-download.ts")),
  ]),

  // publishing (docs/publishing.md): environments guard where builds go, deployments record each publish
  ...tagged("publishing", [
    r("GET", "/v1/projects/{project_id}/environments", projectRole("viewer", "project_id"), () => import("./environments/list.ts")),
    r("GET", "/v1/projects/{project_id}/environments/{environment}", projectRole("viewer", "project_id"), () => import("./environments/get.ts")),
    r("PUT", "/v1/projects/{project_id}/environments/{environment}", projectRole("maintainer", "project_id"), () => import("./environments/put.ts")),
    r("DELETE", "/v1/projects/{project_id}/environments/{environment}", projectRole("maintainer", "project_id"), () => import("./environments/delete.ts")),
    r(
      "GET",
      "/v1/projects/{project_id}/environments/{environment}/secrets",
      projectRole("maintainer", "project_id"),
      () => import("./environments/secrets-list.ts"),
    ),
    r(
      "PUT",
      "/v1/projects/{project_id}/environments/{environment}/secrets/{key}",
      projectRole("maintainer", "project_id"),
      () => import("./environments/secrets-put.ts"),
    ),
    r(
      "DELETE",
      "/v1/projects/{project_id}/environments/{environment}/secrets/{key}",
      projectRole("maintainer", "project_id"),
      () => import("./environments/secrets-delete.ts"),
    ),
    r("GET", "/v1/projects/{project_id}/deployments", projectRole("viewer", "project_id"), () => import("./deployments/list.ts")),
    r("GET", "/v1/builds/{build_id}/deployments", projectRole("viewer", "build_id"), () => import("./deployments/list-for-build.ts")),
    r("POST", "/v1/builds/{build_id}/publish", projectRole("developer", "build_id"), () => import("./deployments/promote.ts")), // promotion: the environment's approval still applies
    r("GET", "/v1/deployments/{deployment_id}", projectRole("viewer", "deployment_id"), () => import("./deployments/get.ts")),
    r("POST", "/v1/deployments/{deployment_id}/approve", projectRole("maintainer", "deployment_id"), () => import("./deployments/approve.ts")), // and one of the environment's approvers, when it lists them
    r("POST", "/v1/deployments/{deployment_id}/reject", projectRole("maintainer", "deployment_id"), () => import("./deployments/reject.ts")), // likewise
    r("POST", "/v1/deployments/{deployment_id}/retry", projectRole("developer", "deployment_id"), () => import("./deployments/retry.ts")),
  ]),

  // test results, coverage and trends (docs/test-results.md)
  ...tagged("test-results", [
    r("GET", "/v1/builds/{build_id}/tests", projectRole("viewer", "build_id"), () => import("./test-results/build-tests.ts")),
    r("GET", "/v1/builds/{build_id}/tests/cases", projectRole("viewer", "build_id"), () => import("./test-results/build-cases.ts")),
    r("GET", "/v1/builds/{build_id}/coverage", projectRole("viewer", "build_id"), () => import("./test-results/build-coverage.ts")),
    r("GET", "/v1/pipelines/{pipeline_id}/tests/{test_key}", projectRole("viewer", "pipeline_id"), () => import("./test-results/test-history.ts")),
    r("GET", "/v1/pipelines/{pipeline_id}/flaky-tests", projectRole("viewer", "pipeline_id"), () => import("./test-results/flaky-tests.ts")),
    r("GET", "/v1/pipelines/{pipeline_id}/trends", projectRole("viewer", "pipeline_id"), () => import("./test-results/trends.ts")),
  ]),

  // status badges: public only when the project allows it (the handler checks)
  ...tagged("badges", [
    r("GET", "/v1/pipelines/{pipeline_id}/badge.svg", "public", () => import("./badges/svg.ts")),
    r("GET", "/v1/projects/{project_id}/badges", projectRole("viewer", "project_id"), () => import("./badges/get-settings.ts")),
    r("PUT", "/v1/projects/{project_id}/badges", projectRole("maintainer", "project_id"), () => import("./badges/put-settings.ts")),
  ]),

  // retention of build logs and artifacts (docs/operations.md "Retention"); enforced in the background
  ...tagged("retention", [
    r("GET", "/v1/projects/{project_id}/retention", projectRole("viewer", "project_id"), () => import("./retention/get-settings.ts")),
    r("PUT", "/v1/projects/{project_id}/retention", projectRole("maintainer", "project_id"), () => import("./retention/put-settings.ts")),
  ]),

  // build notifications (docs/notifications.md); channel secrets are never returned
  ...tagged("notifications", [
    r("POST", "/v1/projects/{project_id}/notifications", projectRole("maintainer", "project_id"), () => import("./notifications/create.ts")),
    r("GET", "/v1/projects/{project_id}/notifications", projectRole("maintainer", "project_id"), () => import("./notifications/list.ts")),
    r("GET", "/v1/projects/{project_id}/notifications/{notification_id}", projectRole("maintainer", "project_id"), () => import("./notifications/get.ts")),
    r("PATCH", "/v1/projects/{project_id}/notifications/{notification_id}", projectRole("maintainer", "project_id"), () => import("./notifications/update.ts")),
    r(
      "DELETE",
      "/v1/projects/{project_id}/notifications/{notification_id}",
      projectRole("maintainer", "project_id"),
      () => import("./notifications/delete.ts"),
    ),
    r(
      "GET",
      "/v1/projects/{project_id}/notifications/{notification_id}/deliveries",
      projectRole("maintainer", "project_id"),
      () => import("./notifications/deliveries.ts"),
    ),
  ]),

  // build logs
  ...tagged("logs", [
    r("GET", "/v1/builds/{build_id}/logs", projectRole("viewer", "build_id"), () => import("./logs/read.ts")),
    r("POST", "/v1/builds/{build_id}/stream-token", projectRole("viewer", "build_id"), () => import("./logs/stream-token.ts")),
    r("GET", "/v1/builds/{build_id}/logs/stream", "stream", () => import("./logs/stream.ts")), // ?token= for this build only
  ]),

  // build changes of the caller's projects, live (the dashboard)
  ...tagged("builds", [r("GET", "/v1/events", "user", () => import("./events/stream.ts"))]),

  // runners: registered by admins
  ...tagged("runners", [
    r("POST", "/v1/runners", "admin", () => import("./runners/create.ts")),
    r("GET", "/v1/runners", "admin", () => import("./runners/list.ts")),
    r("POST", "/v1/runners/{runner_id}/token", "admin", () => import("./runners/rotate-token.ts")),
    r("DELETE", "/v1/runners/{runner_id}", "admin", () => import("./runners/revoke.ts")),
  ]),
  // the runner protocol: authenticated by the runner's own token
  ...tagged("runner-protocol", [
    r("POST", "/v1/runners/{runner_id}/connect", "runner", () => import("./runner-protocol/connect.ts")),
    r("POST", "/v1/runners/{runner_id}/jobs/claim", "runner", () => import("./runner-protocol/claim.ts")),
    r("POST", "/v1/runners/{runner_id}/heartbeat", "runner", () => import("./runner-protocol/heartbeat.ts")),
    r("PUT", "/v1/runners/{runner_id}/jobs/{job_id}/steps/{step}", "runner", () => import("./runner-protocol/step.ts")),
    r("POST", "/v1/runners/{runner_id}/jobs/{job_id}/logs", "runner", () => import("./runner-protocol/logs.ts")),
    r("POST", "/v1/runners/{runner_id}/jobs/{job_id}/finish", "runner", () => import("./runner-protocol/finish.ts")),
    r("POST", "/v1/runners/{runner_id}/jobs/{job_id}/release", "runner", () => import("./runner-protocol/release.ts")),
    r("PUT", "/v1/runners/{runner_id}/jobs/{job_id}/artifacts", "runner", () => import("./runner-protocol/artifact-upload.ts")),
    r("PUT", "/v1/runners/{runner_id}/jobs/{job_id}/test-reports", "runner", () => import("./runner-protocol/test-report-upload.ts")),
    r("GET", "/v1/runners/{runner_id}/jobs/{job_id}/caches", "runner", () => import("./runner-protocol/cache-lookup.ts")),
    r("PUT", "/v1/runners/{runner_id}/jobs/{job_id}/caches", "runner", () => import("./runner-protocol/cache-upload.ts")),
    r("GET", "/v1/runners/{runner_id}/jobs/{job_id}/caches/{cache_id}", "runner", () => import("./runner-protocol/cache-download.ts")),
    r("POST", "/v1/runners/{runner_id}/deployments/{deployment_id}/heartbeat", "runner", () => import("./runner-protocol/deployment-heartbeat.ts")),
    r("POST", "/v1/runners/{runner_id}/deployments/{deployment_id}/logs", "runner", () => import("./runner-protocol/deployment-logs.ts")),
    r("POST", "/v1/runners/{runner_id}/deployments/{deployment_id}/finish", "runner", () => import("./runner-protocol/deployment-finish.ts")),
    r("POST", "/v1/runners/{runner_id}/deployments/{deployment_id}/release", "runner", () => import("./runner-protocol/deployment-release.ts")),
    r("GET", "/v1/runners/{runner_id}/deployments/{deployment_id}/artifacts/{artifact_id}", "runner", () => import("./runner-protocol/deployment-artifact.ts")),
  ]),

  // webhooks: the receivers authenticate each delivery themselves (signature / per-project token)
  ...tagged("webhooks", [
    r("POST", "/v1/webhooks/github", "webhook", () => import("./webhooks/github.ts")), // X-Hub-Signature-256 over the raw body
    r("POST", "/v1/webhooks/gitlab", "webhook", () => import("./webhooks/gitlab.ts")), // X-Gitlab-Token of the project that builds the repository
    r("POST", "/v1/webhooks/gitea", "webhook", () => import("./webhooks/gitea.ts")), // X-Gitea-Signature / X-Forgejo-Signature over the raw body
    r("POST", "/v1/webhooks/bitbucket", "webhook", () => import("./webhooks/bitbucket.ts")), // X-Hub-Signature (sha256=) over the raw body
    r("POST", "/v1/webhooks/git", "webhook", () => import("./webhooks/git.ts")), // X-Roost-Signature-256 with the named project's secret
    r("POST", "/v1/projects/{project_id}/webhook-token", projectRole("maintainer", "project_id"), () => import("./projects/webhook-token.ts")),
    r("GET", "/v1/projects/{project_id}/webhook-deliveries", projectRole("maintainer", "project_id"), () => import("./webhook-deliveries/list.ts")),
    r("GET", "/v1/webhook-deliveries", "admin", () => import("./webhook-deliveries/list-all.ts")),
    r("GET", "/v1/webhook-deliveries/{delivery_id}", projectRole("maintainer", "delivery_id"), () => import("./webhook-deliveries/get.ts")),
  ]),

  ...tagged("operator-incidents", [
    r("GET", "/v1/operator-incidents", "admin", () => import("./operator-incidents/list.ts")),
    r("POST", "/v1/operator-incidents/{id}/read", "admin", () => import("./operator-incidents/read.ts")),
  ]),
];

let document: Promise<Record<string, unknown>> | null = null;
/** The API document, built on its first request: it imports every handler. */
export function openApiDocument(): Promise<Record<string, unknown>> {
  document ??= Promise.all([loadRoutes(routes), import("../lib/http/openapi.ts")]).then(([loaded, { buildOpenApiDocument }]) => buildOpenApiDocument(loaded));
  return document;
}
