// The map of the whole API: one line a route, grouped by resource, with the auth rule of each
// (lib/http/route.ts AuthRule, docs/authorization.md). Nothing else registers a route, and the API
// document (GET /v1/openapi.json) is generated from this table.
import { projectRole, type AuthRule, type EndpointFor, type RouteEntry } from "../lib/http/route.ts";
import { buildOpenApiDocument } from "../lib/http/openapi.ts";

import * as openapi from "./meta/openapi.ts";
import * as pipelineFileSchema from "./schemas/pipeline-file.ts";
import * as healthz from "./meta/healthz.ts";
import * as readyz from "./meta/readyz.ts";
import * as metrics from "./meta/metrics.ts";
import * as setupStatus from "./setup/status.ts";
import * as setupPreferences from "./setup/preferences.ts";
import * as setupOwner from "./setup/owner.ts";
import * as setupComplete from "./setup/complete.ts";
import * as localLogin from "./auth/local-login.ts";
import * as logout from "./auth/logout.ts";
import * as oidcStart from "./auth/oidc-start.ts";
import * as oidcCallback from "./auth/oidc-callback.ts";
import * as trustedProxyLogin from "./auth/trusted-proxy-login.ts";
import * as setupOidc from "./setup/oidc.ts";
import * as setupTrustedProxy from "./setup/trusted-proxy.ts";
import * as oidcSettingsGet from "./settings/oidc-get.ts";
import * as oidcSettingsUpdate from "./settings/oidc-update.ts";
import * as trustedProxySettingsGet from "./settings/trusted-proxy-get.ts";
import * as trustedProxySettingsUpdate from "./settings/trusted-proxy-update.ts";
import * as runtimeModeUpdate from "./settings/runtime-mode-update.ts";
import * as usersMe from "./users/me.ts";
import * as usersList from "./users/list.ts";
import * as usersInvite from "./users/invite.ts";
import * as usersUpdate from "./users/update.ts";
import * as usersDeactivate from "./users/deactivate.ts";
import * as tokensList from "./api-tokens/list.ts";
import * as tokensCreate from "./api-tokens/create.ts";
import * as tokensRevoke from "./api-tokens/revoke.ts";
import * as integrationsCreate from "./integrations/create.ts";
import * as integrationsList from "./integrations/list.ts";
import * as integrationsSync from "./integrations/sync.ts";
import * as integrationsDelete from "./integrations/delete.ts";
import * as repositoriesList from "./integration-repositories/list.ts";
import * as projectsCreate from "./projects/create.ts";
import * as projectsList from "./projects/list.ts";
import * as projectsGet from "./projects/get.ts";
import * as projectsUpdate from "./projects/update.ts";
import * as projectsDelete from "./projects/delete.ts";
import * as membersList from "./project-members/list.ts";
import * as membersSet from "./project-members/set.ts";
import * as membersRemove from "./project-members/remove.ts";
import * as pipelinesCreate from "./pipelines/create.ts";
import * as pipelinesList from "./pipelines/list.ts";
import * as pipelinesGet from "./pipelines/get.ts";
import * as pipelinesUpdate from "./pipelines/update.ts";
import * as pipelinesDelete from "./pipelines/delete.ts";
import * as pipelineFile from "./projects/pipeline-file.ts";
import * as schedulesCreate from "./schedules/create.ts";
import * as schedulesList from "./schedules/list.ts";
import * as schedulesGet from "./schedules/get.ts";
import * as schedulesUpdate from "./schedules/update.ts";
import * as schedulesDelete from "./schedules/delete.ts";
import * as notificationsCreate from "./notifications/create.ts";
import * as notificationsList from "./notifications/list.ts";
import * as notificationsGet from "./notifications/get.ts";
import * as notificationsUpdate from "./notifications/update.ts";
import * as notificationsDelete from "./notifications/delete.ts";
import * as notificationDeliveries from "./notifications/deliveries.ts";
import * as badgeSvg from "./badges/svg.ts";
import * as badgeSettingsGet from "./badges/get-settings.ts";
import * as badgeSettingsPut from "./badges/put-settings.ts";
import * as retentionGet from "./retention/get-settings.ts";
import * as retentionPut from "./retention/put-settings.ts";
import * as buildsCreate from "./builds/create.ts";
import * as buildsList from "./builds/list.ts";
import * as buildsListForPipeline from "./builds/list-for-pipeline.ts";
import * as buildsGet from "./builds/get.ts";
import * as buildsRerun from "./builds/rerun.ts";
import * as buildsCancel from "./builds/cancel.ts";
import * as incidentsList from "./operator-incidents/list.ts";
import * as incidentsRead from "./operator-incidents/read.ts";
import * as runnersCreate from "./runners/create.ts";
import * as runnersList from "./runners/list.ts";
import * as runnersRotate from "./runners/rotate-token.ts";
import * as runnersRevoke from "./runners/revoke.ts";
import * as runnerConnect from "./runner-protocol/connect.ts";
import * as runnerClaim from "./runner-protocol/claim.ts";
import * as runnerHeartbeat from "./runner-protocol/heartbeat.ts";
import * as runnerStep from "./runner-protocol/step.ts";
import * as runnerLogs from "./runner-protocol/logs.ts";
import * as runnerFinish from "./runner-protocol/finish.ts";
import * as runnerRelease from "./runner-protocol/release.ts";
import * as logsRead from "./logs/read.ts";
import * as artifactUpload from "./runner-protocol/artifact-upload.ts";
import * as testReportUpload from "./runner-protocol/test-report-upload.ts";
import * as artifactsList from "./builds/artifacts-list.ts";
import * as artifactDownload from "./builds/artifact-download.ts";
import * as buildTests from "./test-results/build-tests.ts";
import * as buildTestCases from "./test-results/build-cases.ts";
import * as buildCoverage from "./test-results/build-coverage.ts";
import * as testHistory from "./test-results/test-history.ts";
import * as flakyTests from "./test-results/flaky-tests.ts";
import * as pipelineTrends from "./test-results/trends.ts";
import * as logsStreamToken from "./logs/stream-token.ts";
import * as logsStream from "./logs/stream.ts";
import * as eventsStream from "./events/stream.ts";
import * as webhookGithub from "./webhooks/github.ts";
import * as webhookGitlab from "./webhooks/gitlab.ts";
import * as webhookGitea from "./webhooks/gitea.ts";
import * as webhookBitbucket from "./webhooks/bitbucket.ts";
import * as webhookGit from "./webhooks/git.ts";
import * as webhookToken from "./projects/webhook-token.ts";
import * as deliveriesForProject from "./webhook-deliveries/list.ts";
import * as deliveriesAll from "./webhook-deliveries/list-all.ts";
import * as deliveriesGet from "./webhook-deliveries/get.ts";
import * as projectVariablesList from "./variables/project-list.ts";
import * as projectVariablesPut from "./variables/project-put.ts";
import * as projectVariablesDelete from "./variables/project-delete.ts";
import * as pipelineVariablesList from "./variables/pipeline-list.ts";
import * as pipelineVariablesPut from "./variables/pipeline-put.ts";
import * as pipelineVariablesDelete from "./variables/pipeline-delete.ts";
import * as variableChanges from "./variables/changes.ts";
import * as environmentsList from "./environments/list.ts";
import * as environmentsGet from "./environments/get.ts";
import * as environmentsPut from "./environments/put.ts";
import * as environmentsDelete from "./environments/delete.ts";
import * as environmentSecretsList from "./environments/secrets-list.ts";
import * as environmentSecretsPut from "./environments/secrets-put.ts";
import * as environmentSecretsDelete from "./environments/secrets-delete.ts";
import * as deploymentsList from "./deployments/list.ts";
import * as deploymentsForBuild from "./deployments/list-for-build.ts";
import * as deploymentsGet from "./deployments/get.ts";
import * as deploymentsApprove from "./deployments/approve.ts";
import * as deploymentsReject from "./deployments/reject.ts";
import * as deploymentsRetry from "./deployments/retry.ts";
import * as buildsPublish from "./deployments/promote.ts";
import * as runnerDeploymentHeartbeat from "./runner-protocol/deployment-heartbeat.ts";
import * as runnerDeploymentLogs from "./runner-protocol/deployment-logs.ts";
import * as runnerDeploymentFinish from "./runner-protocol/deployment-finish.ts";
import * as runnerDeploymentRelease from "./runner-protocol/deployment-release.ts";
import * as runnerDeploymentArtifact from "./runner-protocol/deployment-artifact.ts";

// The rule decides what the handler finds in its context (lib/http/context.ts ContextFor): a handler
// that reads more than its line's rule provides does not compile.
const r = <Rule extends AuthRule>(method: RouteEntry["method"], path: string, auth: Rule, mod: { endpoint: EndpointFor<NoInfer<Rule>> }): RouteEntry => ({
  method,
  path,
  auth,
  endpoint: mod.endpoint,
});

export const routes: RouteEntry[] = [
  // meta
  r("GET", "/v1/openapi.json", "public", openapi),
  r("GET", "/v1/schemas/pipeline-file.json", "public", pipelineFileSchema),
  r("GET", "/healthz", "public", healthz),
  r("GET", "/readyz", "public", readyz),
  r("GET", "/metrics", "metrics", metrics),

  // first-run setup (README "First run")
  r("GET", "/v1/setup/status", "public", setupStatus),
  r("POST", "/v1/setup/preferences", "setup", setupPreferences),
  r("POST", "/v1/setup/owner", "setup", setupOwner),
  r("PUT", "/v1/setup/oidc", "setup", setupOidc),
  r("PUT", "/v1/setup/trusted-proxy", "setup", setupTrustedProxy),
  r("POST", "/v1/setup/complete", "setup", setupComplete),

  // authentication (docs/api.md "Authentication")
  r("POST", "/v1/auth/local/login", "public", localLogin),
  r("GET", "/v1/auth/oidc/start", "public", oidcStart),
  r("POST", "/v1/auth/oidc/callback", "public", oidcCallback),
  r("POST", "/v1/auth/trusted-proxy/login", "public", trustedProxyLogin), // trusted peer + proxy headers
  r("POST", "/v1/auth/logout", "session", logout),

  // External Access sign-in settings (docs/external-access.md); secrets are never returned
  r("GET", "/v1/settings/oidc", "admin", oidcSettingsGet),
  r("PUT", "/v1/settings/oidc", "admin", oidcSettingsUpdate),
  r("GET", "/v1/settings/trusted-proxy", "admin", trustedProxySettingsGet),
  r("PUT", "/v1/settings/trusted-proxy", "admin", trustedProxySettingsUpdate),
  r("PUT", "/v1/settings/runtime-mode", "owner", runtimeModeUpdate), // after setup: Local Only <-> External Access

  // users
  r("GET", "/v1/users/me", "user", usersMe),
  r("GET", "/v1/users", "admin", usersList),
  r("POST", "/v1/users", "admin", usersInvite),
  r("PATCH", "/v1/users/{user_id}", "admin", usersUpdate),
  r("DELETE", "/v1/users/{user_id}", "admin", usersDeactivate),

  // API tokens (docs/api.md "API tokens")
  r("GET", "/v1/api-tokens", "user", tokensList),
  r("POST", "/v1/api-tokens", "user", tokensCreate),
  r("DELETE", "/v1/api-tokens/{token_id}", "user", tokensRevoke),

  // source integrations and the repository catalogue
  r("POST", "/v1/integrations", "admin", integrationsCreate),
  r("GET", "/v1/integrations", "maintainer", integrationsList),
  r("POST", "/v1/integrations/{integration_id}/sync", "admin", integrationsSync),
  r("DELETE", "/v1/integrations/{integration_id}", "admin", integrationsDelete),
  r("GET", "/v1/integration-repositories", "maintainer", repositoriesList),

  // projects: projectRole(minimum, param) is checked on the project the param names (lib/auth/project-access.ts)
  r("POST", "/v1/projects", "maintainer", projectsCreate),
  r("GET", "/v1/projects", "user", projectsList),
  r("GET", "/v1/projects/{project_id}", projectRole("viewer", "project_id"), projectsGet),
  r("PATCH", "/v1/projects/{project_id}", projectRole("maintainer", "project_id"), projectsUpdate),
  r("DELETE", "/v1/projects/{project_id}", projectRole("maintainer", "project_id"), projectsDelete),
  r("GET", "/v1/projects/{project_id}/members", projectRole("viewer", "project_id"), membersList),
  r("PUT", "/v1/projects/{project_id}/members/{user_id}", projectRole("maintainer", "project_id"), membersSet),
  r("DELETE", "/v1/projects/{project_id}/members/{user_id}", projectRole("maintainer", "project_id"), membersRemove),

  // pipelines
  r("POST", "/v1/projects/{project_id}/pipelines", projectRole("maintainer", "project_id"), pipelinesCreate),
  r("GET", "/v1/projects/{project_id}/pipelines", projectRole("viewer", "project_id"), pipelinesList),
  r("GET", "/v1/projects/{project_id}/pipeline-file", projectRole("viewer", "project_id"), pipelineFile), // roost.yaml at the default branch's head
  r("GET", "/v1/pipelines/{pipeline_id}", projectRole("viewer", "pipeline_id"), pipelinesGet),
  r("PATCH", "/v1/pipelines/{pipeline_id}", projectRole("maintainer", "pipeline_id"), pipelinesUpdate),
  r("DELETE", "/v1/pipelines/{pipeline_id}", projectRole("maintainer", "pipeline_id"), pipelinesDelete),

  // build schedules (docs/operations.md "Scheduled builds")
  r("POST", "/v1/pipelines/{pipeline_id}/schedules", projectRole("maintainer", "pipeline_id"), schedulesCreate),
  r("GET", "/v1/pipelines/{pipeline_id}/schedules", projectRole("viewer", "pipeline_id"), schedulesList),
  r("GET", "/v1/pipelines/{pipeline_id}/schedules/{schedule_id}", projectRole("viewer", "pipeline_id"), schedulesGet),
  r("PATCH", "/v1/pipelines/{pipeline_id}/schedules/{schedule_id}", projectRole("maintainer", "pipeline_id"), schedulesUpdate),
  r("DELETE", "/v1/pipelines/{pipeline_id}/schedules/{schedule_id}", projectRole("maintainer", "pipeline_id"), schedulesDelete),

  // variables and secrets (docs/secrets.md): secret values are write-only, changes are recorded
  r("GET", "/v1/projects/{project_id}/variables", projectRole("maintainer", "project_id"), projectVariablesList),
  r("PUT", "/v1/projects/{project_id}/variables/{key}", projectRole("maintainer", "project_id"), projectVariablesPut),
  r("DELETE", "/v1/projects/{project_id}/variables/{key}", projectRole("maintainer", "project_id"), projectVariablesDelete),
  r("GET", "/v1/pipelines/{pipeline_id}/variables", projectRole("maintainer", "pipeline_id"), pipelineVariablesList),
  r("PUT", "/v1/pipelines/{pipeline_id}/variables/{key}", projectRole("maintainer", "pipeline_id"), pipelineVariablesPut),
  r("DELETE", "/v1/pipelines/{pipeline_id}/variables/{key}", projectRole("maintainer", "pipeline_id"), pipelineVariablesDelete),
  r("GET", "/v1/projects/{project_id}/variable-changes", projectRole("maintainer", "project_id"), variableChanges),

  // builds
  r("POST", "/v1/projects/{project_id}/builds", projectRole("developer", "project_id"), buildsCreate),
  r("GET", "/v1/projects/{project_id}/builds", projectRole("viewer", "project_id"), buildsList),
  r("GET", "/v1/pipelines/{pipeline_id}/builds", projectRole("viewer", "pipeline_id"), buildsListForPipeline),
  r("GET", "/v1/builds/{build_id}", projectRole("viewer", "build_id"), buildsGet),
  r("POST", "/v1/builds/{build_id}/rerun", projectRole("developer", "build_id"), buildsRerun),
  r("POST", "/v1/builds/{build_id}/cancel", projectRole("developer", "build_id"), buildsCancel),
  r("GET", "/v1/builds/{build_id}/artifacts", projectRole("viewer", "build_id"), artifactsList),
  r("GET", "/v1/builds/{build_id}/artifacts/{artifact_id}", projectRole("viewer", "build_id"), artifactDownload),

  // publishing (docs/publishing.md): environments guard where builds go, deployments record each publish
  r("GET", "/v1/projects/{project_id}/environments", projectRole("viewer", "project_id"), environmentsList),
  r("GET", "/v1/projects/{project_id}/environments/{environment}", projectRole("viewer", "project_id"), environmentsGet),
  r("PUT", "/v1/projects/{project_id}/environments/{environment}", projectRole("maintainer", "project_id"), environmentsPut),
  r("DELETE", "/v1/projects/{project_id}/environments/{environment}", projectRole("maintainer", "project_id"), environmentsDelete),
  r("GET", "/v1/projects/{project_id}/environments/{environment}/secrets", projectRole("maintainer", "project_id"), environmentSecretsList),
  r("PUT", "/v1/projects/{project_id}/environments/{environment}/secrets/{key}", projectRole("maintainer", "project_id"), environmentSecretsPut),
  r("DELETE", "/v1/projects/{project_id}/environments/{environment}/secrets/{key}", projectRole("maintainer", "project_id"), environmentSecretsDelete),
  r("GET", "/v1/projects/{project_id}/deployments", projectRole("viewer", "project_id"), deploymentsList),
  r("GET", "/v1/builds/{build_id}/deployments", projectRole("viewer", "build_id"), deploymentsForBuild),
  r("POST", "/v1/builds/{build_id}/publish", projectRole("developer", "build_id"), buildsPublish), // promotion: the environment's approval still applies
  r("GET", "/v1/deployments/{deployment_id}", projectRole("viewer", "deployment_id"), deploymentsGet),
  r("POST", "/v1/deployments/{deployment_id}/approve", projectRole("maintainer", "deployment_id"), deploymentsApprove), // and one of the environment's approvers, when it lists them
  r("POST", "/v1/deployments/{deployment_id}/reject", projectRole("maintainer", "deployment_id"), deploymentsReject), // likewise
  r("POST", "/v1/deployments/{deployment_id}/retry", projectRole("developer", "deployment_id"), deploymentsRetry),

  // test results, coverage and trends (docs/test-results.md)
  r("GET", "/v1/builds/{build_id}/tests", projectRole("viewer", "build_id"), buildTests),
  r("GET", "/v1/builds/{build_id}/tests/cases", projectRole("viewer", "build_id"), buildTestCases),
  r("GET", "/v1/builds/{build_id}/coverage", projectRole("viewer", "build_id"), buildCoverage),
  r("GET", "/v1/pipelines/{pipeline_id}/tests/{test_key}", projectRole("viewer", "pipeline_id"), testHistory),
  r("GET", "/v1/pipelines/{pipeline_id}/flaky-tests", projectRole("viewer", "pipeline_id"), flakyTests),
  r("GET", "/v1/pipelines/{pipeline_id}/trends", projectRole("viewer", "pipeline_id"), pipelineTrends),

  // status badges: public only when the project allows it (the handler checks)
  r("GET", "/v1/pipelines/{pipeline_id}/badge.svg", "public", badgeSvg),
  r("GET", "/v1/projects/{project_id}/badges", projectRole("viewer", "project_id"), badgeSettingsGet),
  r("PUT", "/v1/projects/{project_id}/badges", projectRole("maintainer", "project_id"), badgeSettingsPut),

  // retention of build logs and artifacts (docs/operations.md "Retention"); enforced in the background
  r("GET", "/v1/projects/{project_id}/retention", projectRole("viewer", "project_id"), retentionGet),
  r("PUT", "/v1/projects/{project_id}/retention", projectRole("maintainer", "project_id"), retentionPut),

  // build notifications (docs/notifications.md); channel secrets are never returned
  r("POST", "/v1/projects/{project_id}/notifications", projectRole("maintainer", "project_id"), notificationsCreate),
  r("GET", "/v1/projects/{project_id}/notifications", projectRole("maintainer", "project_id"), notificationsList),
  r("GET", "/v1/projects/{project_id}/notifications/{notification_id}", projectRole("maintainer", "project_id"), notificationsGet),
  r("PATCH", "/v1/projects/{project_id}/notifications/{notification_id}", projectRole("maintainer", "project_id"), notificationsUpdate),
  r("DELETE", "/v1/projects/{project_id}/notifications/{notification_id}", projectRole("maintainer", "project_id"), notificationsDelete),
  r("GET", "/v1/projects/{project_id}/notifications/{notification_id}/deliveries", projectRole("maintainer", "project_id"), notificationDeliveries),

  // build logs
  r("GET", "/v1/builds/{build_id}/logs", projectRole("viewer", "build_id"), logsRead),
  r("POST", "/v1/builds/{build_id}/stream-token", projectRole("viewer", "build_id"), logsStreamToken),
  r("GET", "/v1/builds/{build_id}/logs/stream", "stream", logsStream), // ?token= for this build only

  // build changes of the caller's projects, live (the dashboard)
  r("GET", "/v1/events", "user", eventsStream),

  // runners: registered by admins; the protocol is authenticated by the runner's own token
  r("POST", "/v1/runners", "admin", runnersCreate),
  r("GET", "/v1/runners", "admin", runnersList),
  r("POST", "/v1/runners/{runner_id}/token", "admin", runnersRotate),
  r("DELETE", "/v1/runners/{runner_id}", "admin", runnersRevoke),
  r("POST", "/v1/runners/{runner_id}/connect", "runner", runnerConnect),
  r("POST", "/v1/runners/{runner_id}/jobs/claim", "runner", runnerClaim),
  r("POST", "/v1/runners/{runner_id}/heartbeat", "runner", runnerHeartbeat),
  r("PUT", "/v1/runners/{runner_id}/jobs/{job_id}/steps/{step}", "runner", runnerStep),
  r("POST", "/v1/runners/{runner_id}/jobs/{job_id}/logs", "runner", runnerLogs),
  r("POST", "/v1/runners/{runner_id}/jobs/{job_id}/finish", "runner", runnerFinish),
  r("POST", "/v1/runners/{runner_id}/jobs/{job_id}/release", "runner", runnerRelease),
  r("PUT", "/v1/runners/{runner_id}/jobs/{job_id}/artifacts", "runner", artifactUpload),
  r("PUT", "/v1/runners/{runner_id}/jobs/{job_id}/test-reports", "runner", testReportUpload),
  r("POST", "/v1/runners/{runner_id}/deployments/{deployment_id}/heartbeat", "runner", runnerDeploymentHeartbeat),
  r("POST", "/v1/runners/{runner_id}/deployments/{deployment_id}/logs", "runner", runnerDeploymentLogs),
  r("POST", "/v1/runners/{runner_id}/deployments/{deployment_id}/finish", "runner", runnerDeploymentFinish),
  r("POST", "/v1/runners/{runner_id}/deployments/{deployment_id}/release", "runner", runnerDeploymentRelease),
  r("GET", "/v1/runners/{runner_id}/deployments/{deployment_id}/artifacts/{artifact_id}", "runner", runnerDeploymentArtifact),

  // webhooks: the receivers authenticate each delivery themselves (signature / per-project token)
  r("POST", "/v1/webhooks/github", "webhook", webhookGithub), // X-Hub-Signature-256 over the raw body
  r("POST", "/v1/webhooks/gitlab", "webhook", webhookGitlab), // X-Gitlab-Token of the project that builds the repository
  r("POST", "/v1/webhooks/gitea", "webhook", webhookGitea), // X-Gitea-Signature / X-Forgejo-Signature over the raw body
  r("POST", "/v1/webhooks/bitbucket", "webhook", webhookBitbucket), // X-Hub-Signature (sha256=) over the raw body
  r("POST", "/v1/webhooks/git", "webhook", webhookGit), // X-Roost-Signature-256 with the named project's secret
  r("POST", "/v1/projects/{project_id}/webhook-token", projectRole("maintainer", "project_id"), webhookToken),
  r("GET", "/v1/projects/{project_id}/webhook-deliveries", projectRole("maintainer", "project_id"), deliveriesForProject),
  r("GET", "/v1/webhook-deliveries", "admin", deliveriesAll),
  r("GET", "/v1/webhook-deliveries/{delivery_id}", projectRole("maintainer", "delivery_id"), deliveriesGet),

  // operator incidents
  r("GET", "/v1/operator-incidents", "admin", incidentsList),
  r("POST", "/v1/operator-incidents/{id}/read", "admin", incidentsRead),
];

let document: Record<string, unknown> | null = null;
export function openApiDocument(): Record<string, unknown> {
  return (document ??= buildOpenApiDocument(routes));
}
