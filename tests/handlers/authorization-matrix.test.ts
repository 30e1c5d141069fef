// The authorization walk: every route of the route table, called with no credential and as every
// instance role and every project membership. What each caller should get is derived from the
// route's own rule (handlers/routes.ts), so the walk cannot drift from the table: a refusal must
// be exactly 401 (no credential), 403 (too low) or, for a project the caller may not see, 404; an
// allowed call must succeed. Any other answer (a 400, a 404 for someone allowed, a 500) is reported
// as a failure, never counted as "allowed". Routes whose rule is public, a setup token, a runner,
// stream or metrics token, or a webhook signature say here what a bearer caller gets.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loginCapability, userWithRole, type TestApp } from "../helpers/app.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, createGitlabIntegration, createPipeline, createProject, repositoryId, startGithubFixture, type GithubFixture } from "../helpers/ci.ts";
import { routes } from "../../handlers/routes.ts";
import { isProjectRule, type AuthRule } from "../../lib/http/route.ts";
import { raiseIncident } from "../../lib/daemon/incidents.ts";
import { insertDelivery } from "../../lib/webhooks/deliveries.ts";
import { artifactFile } from "../../lib/artifacts/artifacts.ts";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

type Who = "none" | "developer" | "maintainer" | "admin" | "owner" | "project_viewer" | "project_developer" | "project_maintainer";
const EVERYONE: Who[] = ["none", "developer", "maintainer", "admin", "owner", "project_viewer", "project_developer", "project_maintainer"];

// Project members hold the instance role developer (project_maintainer holds maintainer).
type Request = (token: string | undefined) => Promise<{ path: string; body?: unknown }>;
/**
 * What callers get on a route whose rule the walk cannot derive from roles alone: the callers let
 * through (refusals then must be 401/403, or 409 setup_already_complete on a ready instance), or
 * one status every caller gets (e.g. a public endpoint answering a bad request for what it is).
 */
type Special = Who[] | { everyone: number };
const RULES: Record<string, { special: Special | null; request: Request }> = {};
/** The marker for routes whose expectations come from their rule in handlers/routes.ts. */
const BY_RULE = null;
/** OIDC start on an instance without OIDC configured: 409 oidc_not_configured (docs/external-access.md "Errors"). */
const OIDC_START_STATUS = 409;
let fixture: GithubFixture;
let t: TestApp;
let host: HostApiStandIn;
let owner: string;
const tokens: Partial<Record<Who, string>> = {};
const emails: Partial<Record<Who, string>> = { owner: "owner@example.test" };
let projectId = "";
let pipelineId = "";
let buildId = "";
let incidentId = "";
let developerId = "";
let gitlabProjectId = "";

beforeAll(async () => {
  ({ t, host, owner } = fixture = await startGithubFixture());
  // GitLab webhook tokens exist only for GitLab projects: a second project there, with the same members.
  await createGitlabIntegration(t, owner, host);
  gitlabProjectId = (await createProject(t, owner, "group/mobile")).id;
  const p = await createProject(t, owner);
  projectId = p.id;
  pipelineId = (await createPipeline(t, owner, projectId)).id;
  buildId = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, commit_sha: SHA_A } })).body.build.id;
  incidentId = (
    await raiseIncident(t.db, t.clock.now(), { severity: "info", reason: "walk", message: "m", resource_kind: "test", resource_id: "x", resource_name: "x" })
  ).id;
  tokens.owner = owner;
  for (const role of ["developer", "maintainer", "admin"] as const) {
    const u = await userWithRole(t, owner, role);
    tokens[role] = u.token;
    emails[role] = u.email;
  }
  for (const [who, instanceRole, projectRole] of [
    ["project_viewer", "developer", "viewer"],
    ["project_developer", "developer", "developer"],
    ["project_maintainer", "maintainer", "maintainer"],
  ] as const) {
    const u = await userWithRole(t, owner, instanceRole);
    await t.call("PUT", `/v1/projects/${projectId}/members/${u.id}`, { token: owner, body: { role: projectRole } });
    tokens[who] = u.token;
    emails[who] = u.email;
    if (who === "project_developer") developerId = u.id;
    await t.call("PUT", `/v1/projects/${gitlabProjectId}/members/${u.id}`, { token: owner, body: { role: projectRole } });
  }

  const rules: [string, Special | null, Request][] = [
    ["GET /v1/openapi.json", EVERYONE, async () => ({ path: "/v1/openapi.json" })],
    ["GET /v1/schemas/pipeline-file.json", EVERYONE, async () => ({ path: "/v1/schemas/pipeline-file.json" })],
    ["GET /healthz", EVERYONE, async () => ({ path: "/healthz" })],
    ["GET /readyz", EVERYONE, async () => ({ path: "/readyz" })],
    ["GET /metrics", EVERYONE, async () => ({ path: "/metrics" })], // loopback peer without ROOST_METRICS_TOKEN (tests/handlers/operations.test.ts covers the rest)
    ["GET /v1/setup/status", EVERYONE, async () => ({ path: "/v1/setup/status" })],
    ["POST /v1/setup/preferences", [], async () => ({ path: "/v1/setup/preferences", body: { runtime_mode: "local" } })],
    ["POST /v1/setup/owner", [], async () => ({ path: "/v1/setup/owner", body: { email: "x@example.test" } })],
    ["POST /v1/setup/complete", [], async () => ({ path: "/v1/setup/complete" })],
    [
      "POST /v1/auth/local/login",
      EVERYONE,
      async () => ({ path: "/v1/auth/local/login", body: { email: "owner@example.test", recovery_capability: await loginCapability(t) } }),
    ],
    ["POST /v1/auth/logout", BY_RULE, async () => ({ path: "/v1/auth/logout" })],
    // External Access sign-in on this Local Only instance: OIDC start and callback answer what they answer anyone
    // (not a refusal); trusted-proxy login is 403 mode_restricted for everyone (tests/handlers/trusted-proxy-login.test.ts).
    ["GET /v1/auth/oidc/start", { everyone: OIDC_START_STATUS }, async () => ({ path: "/v1/auth/oidc/start" })],
    ["POST /v1/auth/oidc/callback", { everyone: 400 }, async () => ({ path: "/v1/auth/oidc/callback", body: { code: "c", state: "s" } })], // invalid_state
    ["POST /v1/auth/trusted-proxy/login", [], async () => ({ path: "/v1/auth/trusted-proxy/login" })],
    [
      "PUT /v1/setup/oidc",
      [],
      async () => ({
        path: "/v1/setup/oidc",
        body: { issuer: "https://idp.example.test", client_id: "c", client_secret: "s", redirect_uris: ["https://ci.example.test/cb"] },
      }),
    ],
    ["PUT /v1/setup/trusted-proxy", [], async () => ({ path: "/v1/setup/trusted-proxy", body: { trusted_peers: ["10.0.0.5"] } })],
    ["GET /v1/settings/oidc", BY_RULE, async () => ({ path: "/v1/settings/oidc" })],
    [
      "PUT /v1/settings/oidc",
      BY_RULE,
      async () => ({
        path: "/v1/settings/oidc",
        body: { issuer: "https://idp.example.test", client_id: "c", client_secret: "s", redirect_uris: ["https://ci.example.test/cb"] },
      }),
    ],
    ["GET /v1/settings/trusted-proxy", BY_RULE, async () => ({ path: "/v1/settings/trusted-proxy" })],
    ["PUT /v1/settings/trusted-proxy", BY_RULE, async () => ({ path: "/v1/settings/trusted-proxy", body: { trusted_peers: ["10.0.0.5"] } })],
    ["PUT /v1/settings/runtime-mode", BY_RULE, async () => ({ path: "/v1/settings/runtime-mode", body: { runtime_mode: "local" } })],
    ["GET /v1/users/me", BY_RULE, async () => ({ path: "/v1/users/me" })],
    ["GET /v1/users", BY_RULE, async () => ({ path: "/v1/users" })],
    ["POST /v1/users", BY_RULE, async () => ({ path: "/v1/users", body: { email: `${crypto.randomUUID()}@example.test`, role: "developer" } })],
    ["PATCH /v1/users/{user_id}", BY_RULE, async () => ({ path: `/v1/users/${(await userWithRole(t, owner, "developer")).id}`, body: { role: "developer" } })],
    ["DELETE /v1/users/{user_id}", BY_RULE, async () => ({ path: `/v1/users/${(await userWithRole(t, owner, "developer")).id}` })],
    ["GET /v1/api-tokens", BY_RULE, async () => ({ path: "/v1/api-tokens" })],
    ["POST /v1/api-tokens", BY_RULE, async () => ({ path: "/v1/api-tokens", body: { name: "walk", role: "developer" } })],
    [
      "DELETE /v1/api-tokens/{token_id}",
      BY_RULE,
      async (token) => ({
        path: `/v1/api-tokens/${token ? ((await t.call("POST", "/v1/api-tokens", { token, body: { name: "walk", role: "developer" } })).body.token_info?.id ?? (await t.call("GET", "/v1/api-tokens", { token })).body.tokens?.[0]?.id) : "unknown"}`,
      }),
    ],
    [
      "POST /v1/integrations",
      BY_RULE,
      async () => ({ path: "/v1/integrations", body: { provider: "gitlab", name: "walk", api_url: host.url, access_token: host.gitlab.token } }),
    ],
    ["GET /v1/integrations", BY_RULE, async () => ({ path: "/v1/integrations" })],
    ["POST /v1/integrations/{integration_id}/sync", BY_RULE, async () => ({ path: `/v1/integrations/${await integrationId()}/sync` })],
    ["DELETE /v1/integrations/{integration_id}", BY_RULE, async () => ({ path: `/v1/integrations/${await integrationId()}` })],
    ["GET /v1/integration-repositories", BY_RULE, async () => ({ path: "/v1/integration-repositories" })],
    ["POST /v1/projects", BY_RULE, async () => ({ path: "/v1/projects", body: { repository_id: await repositoryId(t, owner, "acme/website") } })],
    ["GET /v1/projects", BY_RULE, async () => ({ path: "/v1/projects" })],
    ["GET /v1/projects/{project_id}", BY_RULE, async () => ({ path: `/v1/projects/${projectId}` })],
    ["PATCH /v1/projects/{project_id}", BY_RULE, async () => ({ path: `/v1/projects/${projectId}`, body: { description: "walked" } })],
    ["DELETE /v1/projects/{project_id}", BY_RULE, async () => ({ path: `/v1/projects/${projectId}` })],
    ["GET /v1/projects/{project_id}/members", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/members` })],
    [
      "PUT /v1/projects/{project_id}/members/{user_id}",
      BY_RULE,
      async () => ({ path: `/v1/projects/${projectId}/members/${developerId}`, body: { role: "developer" } }),
    ],
    [
      "DELETE /v1/projects/{project_id}/members/{user_id}",
      BY_RULE,
      async () => {
        const member = await userWithRole(t, owner, "developer");
        await t.call("PUT", `/v1/projects/${projectId}/members/${member.id}`, { token: owner, body: { role: "viewer" } });
        return { path: `/v1/projects/${projectId}/members/${member.id}` };
      },
    ],
    [
      "POST /v1/projects/{project_id}/pipelines",
      BY_RULE,
      async () => ({ path: `/v1/projects/${projectId}/pipelines`, body: { name: `walk-${crypto.randomUUID()}` } }),
    ],
    ["GET /v1/projects/{project_id}/pipelines", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/pipelines` })],
    ["GET /v1/projects/{project_id}/pipeline-file", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/pipeline-file` })],
    ["GET /v1/pipelines/{pipeline_id}", BY_RULE, async () => ({ path: `/v1/pipelines/${pipelineId}` })],
    ["PATCH /v1/pipelines/{pipeline_id}", BY_RULE, async () => ({ path: `/v1/pipelines/${pipelineId}`, body: { enabled: true } })],
    ["DELETE /v1/pipelines/{pipeline_id}", BY_RULE, async () => ({ path: `/v1/pipelines/${pipelineId}` })],
    [
      "POST /v1/projects/{project_id}/builds",
      BY_RULE,
      async () => ({ path: `/v1/projects/${projectId}/builds`, body: { pipeline_id: pipelineId, commit_sha: SHA_A } }),
    ],
    ["GET /v1/projects/{project_id}/builds", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/builds` })],
    ["GET /v1/pipelines/{pipeline_id}/builds", BY_RULE, async () => ({ path: `/v1/pipelines/${pipelineId}/builds` })],
    ["GET /v1/projects/{project_id}/badges", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/badges` })],
    ["PUT /v1/projects/{project_id}/badges", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/badges`, body: { public: true } })],
    ["GET /v1/projects/{project_id}/retention", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/retention` })],
    ["PUT /v1/projects/{project_id}/retention", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/retention`, body: { keep_builds: 50 } })],
    // Public once the project allows it: anyone may then read it.
    [
      "GET /v1/pipelines/{pipeline_id}/badge.svg",
      EVERYONE,
      async () => {
        await t.call("PUT", `/v1/projects/${projectId}/badges`, { token: owner, body: { public: true } });
        return { path: `/v1/pipelines/${pipelineId}/badge.svg` };
      },
    ],
    ["POST /v1/projects/{project_id}/notifications", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/notifications`, body: NOTIFICATION })],
    ["GET /v1/projects/{project_id}/notifications", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/notifications` })],
    [
      "GET /v1/projects/{project_id}/notifications/{notification_id}",
      BY_RULE,
      async () => ({ path: `/v1/projects/${projectId}/notifications/${await notificationId()}` }),
    ],
    [
      "PATCH /v1/projects/{project_id}/notifications/{notification_id}",
      BY_RULE,
      async () => ({ path: `/v1/projects/${projectId}/notifications/${await notificationId()}`, body: { enabled: false } }),
    ],
    [
      "DELETE /v1/projects/{project_id}/notifications/{notification_id}",
      BY_RULE,
      async () => ({ path: `/v1/projects/${projectId}/notifications/${await notificationId()}` }),
    ],
    [
      "GET /v1/projects/{project_id}/notifications/{notification_id}/deliveries",
      BY_RULE,
      async () => ({ path: `/v1/projects/${projectId}/notifications/${await notificationId()}/deliveries` }),
    ],
    ["POST /v1/pipelines/{pipeline_id}/schedules", BY_RULE, async () => ({ path: `/v1/pipelines/${pipelineId}/schedules`, body: { cron: "@daily" } })],
    ["GET /v1/pipelines/{pipeline_id}/schedules", BY_RULE, async () => ({ path: `/v1/pipelines/${pipelineId}/schedules` })],
    ["GET /v1/pipelines/{pipeline_id}/schedules/{schedule_id}", BY_RULE, async () => ({ path: `/v1/pipelines/${pipelineId}/schedules/${await scheduleId()}` })],
    [
      "PATCH /v1/pipelines/{pipeline_id}/schedules/{schedule_id}",
      BY_RULE,
      async () => ({ path: `/v1/pipelines/${pipelineId}/schedules/${await scheduleId()}`, body: { enabled: false } }),
    ],
    [
      "DELETE /v1/pipelines/{pipeline_id}/schedules/{schedule_id}",
      BY_RULE,
      async () => ({ path: `/v1/pipelines/${pipelineId}/schedules/${await scheduleId()}` }),
    ],
    ["GET /v1/projects/{project_id}/variables", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/variables` })],
    [
      "PUT /v1/projects/{project_id}/variables/{key}",
      BY_RULE,
      async () => ({ path: `/v1/projects/${projectId}/variables/WALK`, body: { value: "walk-secret", secret: true } }),
    ],
    [
      "DELETE /v1/projects/{project_id}/variables/{key}",
      BY_RULE,
      async () => ({ path: `/v1/projects/${projectId}/variables/${await variableKey(`/v1/projects/${projectId}`)}` }),
    ],
    ["GET /v1/pipelines/{pipeline_id}/variables", BY_RULE, async () => ({ path: `/v1/pipelines/${pipelineId}/variables` })],
    ["PUT /v1/pipelines/{pipeline_id}/variables/{key}", BY_RULE, async () => ({ path: `/v1/pipelines/${pipelineId}/variables/WALK`, body: { value: "walk" } })],
    [
      "DELETE /v1/pipelines/{pipeline_id}/variables/{key}",
      BY_RULE,
      async () => ({ path: `/v1/pipelines/${pipelineId}/variables/${await variableKey(`/v1/pipelines/${pipelineId}`)}` }),
    ],
    ["GET /v1/projects/{project_id}/variable-changes", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/variable-changes` })],
    ["GET /v1/builds/{build_id}", BY_RULE, async () => ({ path: `/v1/builds/${buildId}` })],
    ["POST /v1/builds/{build_id}/rerun", BY_RULE, async () => ({ path: `/v1/builds/${buildId}/rerun` })],
    ["POST /v1/builds/{build_id}/cancel", BY_RULE, async () => ({ path: `/v1/builds/${buildId}/cancel` })],
    // The receivers authenticate by signature or per-repository token, never by bearer: without one, everybody is refused.
    ["POST /v1/webhooks/github", [], async () => ({ path: "/v1/webhooks/github", body: { zen: "x" } })],
    ["POST /v1/webhooks/gitlab", [], async () => ({ path: "/v1/webhooks/gitlab", body: { object_kind: "push", project: { id: 1 } } })],
    ["POST /v1/webhooks/gitea", [], async () => ({ path: "/v1/webhooks/gitea", body: { ref: "refs/heads/main" } })],
    ["POST /v1/webhooks/bitbucket", [], async () => ({ path: "/v1/webhooks/bitbucket", body: { push: { changes: [] } } })],
    [
      "POST /v1/webhooks/git",
      [],
      async () => ({ path: "/v1/webhooks/git", body: { project_id: projectId, ref: "refs/heads/main", before: SHA_A, after: SHA_A } }),
    ],
    ["POST /v1/projects/{project_id}/webhook-token", BY_RULE, async () => ({ path: `/v1/projects/${gitlabProjectId}/webhook-token` })],
    ["GET /v1/projects/{project_id}/webhook-deliveries", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/webhook-deliveries` })],
    ["GET /v1/webhook-deliveries", BY_RULE, async () => ({ path: "/v1/webhook-deliveries" })],
    [
      "GET /v1/webhook-deliveries/{delivery_id}",
      BY_RULE,
      async () => {
        const id = crypto.randomUUID().replace(/-/g, "").slice(0, 20);
        await insertDelivery(t.db, {
          id,
          host: "github",
          delivery_id: "d",
          event: "push",
          action: "",
          verified: true,
          result: "ignored",
          reason: "walk",
          repository_external_id: null,
          repository_full_name: null,
          repository_id: null,
          project_id: projectId,
          commit_sha: null,
          decisions: [],
          duplicate_of: null,
          received_at: 1,
          body: { text: null, pieces: 0 },
        });
        return { path: `/v1/webhook-deliveries/${id}` };
      },
    ],
    ["GET /v1/builds/{build_id}/logs", BY_RULE, async () => ({ path: `/v1/builds/${buildId}/logs` })],
    ["GET /v1/builds/{build_id}/artifacts", BY_RULE, async () => ({ path: `/v1/builds/${buildId}/artifacts` })],
    [
      "GET /v1/builds/{build_id}/artifacts/{artifact_id}",
      BY_RULE,
      async () => {
        // A stored artifact of the walk's build (row and file), so allowed callers get 200.
        const id = crypto.randomUUID().replace(/-/g, "").slice(0, 20);
        await t.db.execute({
          sql: "INSERT INTO artifacts (id, build_id, job_id, path, size, sha256, created_at) VALUES (?, ?, 'j', ?, 2, 'x', 1)",
          args: [id, buildId, `${id}.apk`],
        });
        mkdirSync(join(t.dataDir, "artifacts", buildId), { recursive: true });
        writeFileSync(artifactFile(t.dataDir, buildId, id), "ok");
        return { path: `/v1/builds/${buildId}/artifacts/${id}` };
      },
    ],
    ["PUT /v1/runners/{runner_id}/jobs/{job_id}/artifacts", [], async () => ({ path: `/v1/runners/${await runnerId()}/jobs/x/artifacts?path=a.apk` })],
    [
      "GET /v1/runners/{runner_id}/jobs/{job_id}/caches",
      [],
      async () => ({ path: `/v1/runners/${await runnerId()}/jobs/x/caches?key=k&version=0123456789abcdef` }),
    ],
    [
      "PUT /v1/runners/{runner_id}/jobs/{job_id}/caches",
      [],
      async () => ({ path: `/v1/runners/${await runnerId()}/jobs/x/caches?key=k&version=0123456789abcdef` }),
    ],
    ["GET /v1/runners/{runner_id}/jobs/{job_id}/caches/{cache_id}", [], async () => ({ path: `/v1/runners/${await runnerId()}/jobs/x/caches/y` })],
    [
      "PUT /v1/runners/{runner_id}/jobs/{job_id}/test-reports",
      [],
      async () => ({ path: `/v1/runners/${await runnerId()}/jobs/x/test-reports?path=coverage/lcov.info` }),
    ],
    ["GET /v1/projects/{project_id}/environments", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/environments` })],
    [
      "GET /v1/projects/{project_id}/environments/{environment}",
      BY_RULE,
      async () => ({ path: `/v1/projects/${projectId}/environments/${await environmentName()}` }),
    ],
    [
      "PUT /v1/projects/{project_id}/environments/{environment}",
      BY_RULE,
      async () => ({ path: `/v1/projects/${projectId}/environments/walk`, body: { requires_approval: true } }),
    ],
    [
      "DELETE /v1/projects/{project_id}/environments/{environment}",
      BY_RULE,
      async () => ({ path: `/v1/projects/${projectId}/environments/${await environmentName()}` }),
    ],
    [
      "GET /v1/projects/{project_id}/environments/{environment}/secrets",
      BY_RULE,
      async () => ({ path: `/v1/projects/${projectId}/environments/${await environmentName()}/secrets` }),
    ],
    [
      "PUT /v1/projects/{project_id}/environments/{environment}/secrets/{key}",
      BY_RULE,
      async () => ({ path: `/v1/projects/${projectId}/environments/${await environmentName()}/secrets/WALK`, body: { value: "walk-secret", secret: true } }),
    ],
    [
      "DELETE /v1/projects/{project_id}/environments/{environment}/secrets/{key}",
      BY_RULE,
      async () => {
        const name = await environmentName();
        await t.call("PUT", `/v1/projects/${projectId}/environments/${name}/secrets/WALK`, { token: owner, body: { value: "walk-secret", secret: true } });
        return { path: `/v1/projects/${projectId}/environments/${name}/secrets/WALK` };
      },
    ],
    ["GET /v1/projects/{project_id}/deployments", BY_RULE, async () => ({ path: `/v1/projects/${projectId}/deployments` })],
    ["GET /v1/builds/{build_id}/deployments", BY_RULE, async () => ({ path: `/v1/builds/${buildId}/deployments` })],
    ["POST /v1/builds/{build_id}/publish", BY_RULE, async () => ({ path: `/v1/builds/${await publishableBuild()}/publish`, body: { publisher: "walk" } })],
    ["GET /v1/deployments/{deployment_id}", BY_RULE, async () => ({ path: `/v1/deployments/${await deploymentId("waiting_approval")}` })],
    ["POST /v1/deployments/{deployment_id}/approve", BY_RULE, async () => ({ path: `/v1/deployments/${await deploymentId("waiting_approval")}/approve` })],
    ["POST /v1/deployments/{deployment_id}/reject", BY_RULE, async () => ({ path: `/v1/deployments/${await deploymentId("waiting_approval")}/reject` })],
    ["POST /v1/deployments/{deployment_id}/retry", BY_RULE, async () => ({ path: `/v1/deployments/${await deploymentId("failed")}/retry` })],
    [
      "POST /v1/runners/{runner_id}/deployments/{deployment_id}/heartbeat",
      [],
      async () => ({ path: `/v1/runners/${await runnerId()}/deployments/x/heartbeat` }),
    ],
    [
      "POST /v1/runners/{runner_id}/deployments/{deployment_id}/logs",
      [],
      async () => ({ path: `/v1/runners/${await runnerId()}/deployments/x/logs`, body: { first_line: 0, lines: [] } }),
    ],
    [
      "POST /v1/runners/{runner_id}/deployments/{deployment_id}/finish",
      [],
      async () => ({ path: `/v1/runners/${await runnerId()}/deployments/x/finish`, body: { status: "succeeded", line_count: 0 } }),
    ],
    ["POST /v1/runners/{runner_id}/deployments/{deployment_id}/release", [], async () => ({ path: `/v1/runners/${await runnerId()}/deployments/x/release` })],
    [
      "GET /v1/runners/{runner_id}/deployments/{deployment_id}/artifacts/{artifact_id}",
      [],
      async () => ({ path: `/v1/runners/${await runnerId()}/deployments/x/artifacts/y` }),
    ],
    ["GET /v1/builds/{build_id}/tests", BY_RULE, async () => ({ path: `/v1/builds/${buildId}/tests` })],
    ["GET /v1/builds/{build_id}/tests/cases", BY_RULE, async () => ({ path: `/v1/builds/${buildId}/tests/cases?status=failed` })],
    ["GET /v1/builds/{build_id}/coverage", BY_RULE, async () => ({ path: `/v1/builds/${buildId}/coverage` })],
    [
      "GET /v1/pipelines/{pipeline_id}/tests/{test_key}",
      BY_RULE,
      async () => {
        // A test the walk's pipeline knows, so allowed callers get 200.
        await t.db.execute({
          sql: "INSERT OR IGNORE INTO tests (pipeline_id, test_key, suite, name, first_seen_at, last_seen_at) VALUES (?, '00000000000000aa', 's', 'n', 1, 1)",
          args: [pipelineId],
        });
        return { path: `/v1/pipelines/${pipelineId}/tests/00000000000000aa` };
      },
    ],
    ["GET /v1/pipelines/{pipeline_id}/flaky-tests", BY_RULE, async () => ({ path: `/v1/pipelines/${pipelineId}/flaky-tests` })],
    ["GET /v1/pipelines/{pipeline_id}/trends", BY_RULE, async () => ({ path: `/v1/pipelines/${pipelineId}/trends` })],
    ["POST /v1/builds/{build_id}/stream-token", BY_RULE, async () => ({ path: `/v1/builds/${buildId}/stream-token` })],
    // Only a stream token (?token=) opens a stream; a bearer credential of any role does not.
    ["GET /v1/builds/{build_id}/logs/stream", [], async () => ({ path: `/v1/builds/${buildId}/logs/stream` })],
    // Opens an endless stream when allowed: the walk reads its status and closes it (STREAMS).
    ["GET /v1/events", BY_RULE, async () => ({ path: "/v1/events" })],
    ["POST /v1/runners", BY_RULE, async () => ({ path: "/v1/runners", body: { name: "walk" } })],
    ["GET /v1/runners", BY_RULE, async () => ({ path: "/v1/runners" })],
    ["POST /v1/runners/{runner_id}/token", BY_RULE, async () => ({ path: `/v1/runners/${await runnerId()}/token` })],
    ["DELETE /v1/runners/{runner_id}", BY_RULE, async () => ({ path: `/v1/runners/${await runnerId()}` })],
    // The runner protocol takes the runner's own token only: no user credential works.
    [
      "POST /v1/runners/{runner_id}/connect",
      [],
      async () => ({ path: `/v1/runners/${await runnerId()}/connect`, body: { capabilities: { os: "linux", arch: "x64" } } }),
    ],
    [
      "POST /v1/runners/{runner_id}/jobs/claim",
      [],
      async () => ({ path: `/v1/runners/${await runnerId()}/jobs/claim`, body: { claim_id: "walk-claim-1", wait_seconds: 0 } }),
    ],
    ["POST /v1/runners/{runner_id}/heartbeat", [], async () => ({ path: `/v1/runners/${await runnerId()}/heartbeat`, body: {} })],
    [
      "PUT /v1/runners/{runner_id}/jobs/{job_id}/steps/{step}",
      [],
      async () => ({ path: `/v1/runners/${await runnerId()}/jobs/x/steps/build`, body: { status: "running", started_at: 1 } }),
    ],
    [
      "POST /v1/runners/{runner_id}/jobs/{job_id}/logs",
      [],
      async () => ({ path: `/v1/runners/${await runnerId()}/jobs/x/logs`, body: { first_line: 0, lines: [] } }),
    ],
    [
      "POST /v1/runners/{runner_id}/jobs/{job_id}/finish",
      [],
      async () => ({ path: `/v1/runners/${await runnerId()}/jobs/x/finish`, body: { status: "succeeded", exit_code: 0, line_count: 0 } }),
    ],
    ["POST /v1/runners/{runner_id}/jobs/{job_id}/release", [], async () => ({ path: `/v1/runners/${await runnerId()}/jobs/x/release` })],
    ["GET /v1/operator-incidents", BY_RULE, async () => ({ path: "/v1/operator-incidents" })],
    ["POST /v1/operator-incidents/{id}/read", BY_RULE, async () => ({ path: `/v1/operator-incidents/${incidentId}/read` })],
  ];
  for (const [key, special, request] of rules) RULES[key] = { special, request };
});
afterAll(async () => {
  await fixture.stop();
});

type Expected = { allowed: true } | { allowed: false; status: number[] };

/** What `who` should get on a route, from the route's rule; null when the walk cannot derive it. */
function fromRule(auth: AuthRule, who: Who): Expected | null {
  if (who === "none") return ["public", "webhook", "metrics"].includes(auth as string) ? null : { allowed: false, status: [401] };
  const instanceRole = who.startsWith("project_") ? (who === "project_maintainer" ? "maintainer" : "developer") : who;
  const rank = { developer: 1, maintainer: 2, admin: 3, owner: 4 }[instanceRole as "developer"];
  if (isProjectRule(auth)) {
    if (rank >= 3) return { allowed: true };
    if (!who.startsWith("project_")) return { allowed: false, status: [404] }; // a project they may not see
    const mine = { viewer: 1, developer: 2, maintainer: 3 }[who.slice("project_".length) as "viewer"];
    return mine >= { viewer: 1, developer: 2, maintainer: 3 }[auth.minimum] ? { allowed: true } : { allowed: false, status: [403] };
  }
  const minimum = ({ user: 1, session: 1, maintainer: 2, admin: 3, owner: 4 } as Record<string, number>)[auth as string];
  if (minimum === undefined) return null;
  return rank >= minimum ? { allowed: true } : { allowed: false, status: [403] };
}

function expected(route: (typeof routes)[number], who: Who): Expected {
  const special = RULES[`${route.method} ${route.path}`]!.special;
  if (special === null) return fromRule(route.auth, who) ?? { allowed: false, status: [401, 403] };
  if (!Array.isArray(special)) return { allowed: false, status: [special.everyone] };
  if (special.includes(who)) return { allowed: true };
  return { allowed: false, status: route.auth === "setup" ? [401, 409] : [401, 403] };
}

/** Routes whose success is a stream that stays open: read the status, then close it. */
const STREAMS = new Set(["GET /v1/events"]);
async function openStream(path: string, token: string | undefined): Promise<{ status: number; text: string; body: any }> {
  const headers: Record<string, string> = { host: "127.0.0.1:8080" };
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await t.app.fetch(new Request(`http://127.0.0.1:8080${path}`, { headers }), "127.0.0.1");
  if (response.status < 400) {
    await response.body?.cancel();
    return { status: response.status, text: "", body: undefined };
  }
  const text = await response.text();
  return { status: response.status, text, body: JSON.parse(text) };
}

describe("the authorization walk", () => {
  test("every route in the route table is walked", () => {
    const missing = routes.map((r) => `${r.method} ${r.path}`).filter((k) => !RULES[k]);
    expect(missing).toEqual([]);
  });

  test("every route, every caller: refused with exactly 401/403 (404 for an invisible project), or allowed and successful", async () => {
    const mismatches: string[] = [];
    for (const route of routes) {
      const key = `${route.method} ${route.path}`;
      const rule = RULES[key];
      if (!rule) continue;
      for (const who of EVERYONE) {
        const token = who === "none" ? undefined : tokens[who];
        // Destructive calls run on their own fixtures so later callers still find something to act on.
        const { path, body } = await rule.request(token);
        const res = STREAMS.has(key) ? await openStream(path, token) : await t.call(route.method, path, { token, body });
        const want = expected(route, who);
        const got = `${res.status} ${res.text.slice(0, 120)}`;
        if (want.allowed) {
          // Allowed means it worked: a 400, a 404 or a 5xx is a broken fixture or a broken route, not "allowed".
          if (res.status >= 400) mismatches.push(`${key} as ${who}: expected success, got ${got}`);
        } else if (!want.status.includes(res.status)) {
          mismatches.push(`${key} as ${who}: expected ${want.status.join(" or ")}, got ${got}`);
        }
        const succeeded = res.status < 400;
        // Re-create what a destructive call removed, and sessions that logout ended.
        if (succeeded && route.method === "POST" && route.path === "/v1/projects") {
          await t.call("DELETE", `/v1/projects/${res.body.project.id}`, { token: owner });
        }
        if (succeeded && route.method === "DELETE" && route.path === "/v1/projects/{project_id}") {
          projectId = (await createProject(t, owner)).id;
          pipelineId = (await createPipeline(t, owner, projectId)).id;
          buildId = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, commit_sha: SHA_A } })).body
            .build.id;
          for (const [w, role] of [
            ["project_viewer", "viewer"],
            ["project_developer", "developer"],
            ["project_maintainer", "maintainer"],
          ] as const) {
            const me = await t.call("GET", "/v1/users/me", { token: tokens[w] });
            await t.call("PUT", `/v1/projects/${projectId}/members/${me.body.user.id}`, { token: owner, body: { role } });
          }
        }
        if (succeeded && route.method === "DELETE" && route.path === "/v1/pipelines/{pipeline_id}") {
          pipelineId = (await createPipeline(t, owner, projectId)).id;
          buildId = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, commit_sha: SHA_A } })).body
            .build.id;
        }
        if (succeeded && route.path === "/v1/builds/{build_id}/cancel") {
          buildId = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, commit_sha: SHA_A } })).body
            .build.id;
        }
        // Logout ends the caller's session, and a login ends the session presented with it: sign in again.
        if (succeeded && (route.path === "/v1/auth/logout" || route.path === "/v1/auth/local/login") && who !== "none") await signIn(who);
      }
    }
    expect(mismatches).toEqual([]);
  });
});

const NOTIFICATION = { name: "walk", channel: "slack", events: ["failed"], slack: { url: "https://hooks.example.test/services/x" } };
async function notificationId(): Promise<string> {
  const res = await t.call("POST", `/v1/projects/${projectId}/notifications`, { token: owner, body: NOTIFICATION });
  return res.body.notification.id;
}

async function scheduleId(): Promise<string> {
  const res = await t.call("POST", `/v1/pipelines/${pipelineId}/schedules`, { token: owner, body: { cron: "@daily" } });
  return res.body.schedule.id;
}

async function integrationId(): Promise<string> {
  const res = await t.call("POST", "/v1/integrations", {
    token: owner,
    body: { provider: "gitlab", name: `walk-${crypto.randomUUID().slice(0, 6)}`, api_url: host.url, access_token: host.gitlab.token },
  });
  return res.body.integration.id;
}

async function runnerId(): Promise<string> {
  return (await t.call("POST", "/v1/runners", { token: owner, body: { name: "walk" } })).body.runner.id;
}

async function signIn(who: Who): Promise<void> {
  const res = await t.call("POST", "/v1/auth/local/login", { body: { email: emails[who], recovery_capability: await loginCapability(t) } });
  tokens[who] = res.body.session_token;
  if (who === "owner") owner = res.body.session_token;
}

/** A fresh environment of the walk's project, so each caller's DELETE finds one. */
async function environmentName(): Promise<string> {
  const name = `walk-${crypto.randomUUID().slice(0, 8)}`;
  await t.call("PUT", `/v1/projects/${projectId}/environments/${name}`, { token: owner, body: {} });
  return name;
}

const WALK_PUBLISHER = { type: "google_play", name: "walk", environment: "walk-open", package_name: "com.example.walk" };

/** A successful build of the walk's project whose pipeline publishes to an open environment, with a bundle. */
async function publishableBuild(): Promise<string> {
  await t.call("PUT", `/v1/projects/${projectId}/environments/walk-open`, { token: owner, body: {} });
  const pipeline = await createPipeline(t, owner, projectId, { execution_config: { publish: [WALK_PUBLISHER] } });
  const build = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body.build;
  await t.db.execute({ sql: "UPDATE builds SET status = 'succeeded', finished_at = 1 WHERE id = ?", args: [build.id] });
  await t.db.execute({
    sql: "INSERT INTO artifacts (id, build_id, job_id, path, size, sha256, created_at) VALUES (?, ?, 'j', 'app.aab', 2, 'x', 1)",
    args: [crypto.randomUUID().replace(/-/g, "").slice(0, 20), build.id],
  });
  return build.id;
}

/** A fresh deployment of a publishable build in `status`, so each caller's decision or retry finds one to act on. */
async function deploymentId(status: "waiting_approval" | "failed"): Promise<string> {
  const build = await publishableBuild();
  const id = crypto.randomUUID().replace(/-/g, "").slice(0, 20);
  await t.db.execute({
    sql: `INSERT INTO deployments (id, project_id, build_id, environment_name, publisher_name, publisher_type, publisher, target, trigger, status, created_at, updated_at)
          VALUES (?, ?, ?, 'walk-open', 'walk', 'google_play', ?, 'com.example.walk internal', 'build', ?, 1, 1)`,
    args: [id, projectId, build, JSON.stringify({ ...WALK_PUBLISHER, track: "internal", credentials: "GOOGLE_PLAY_SERVICE_ACCOUNT" }), status],
  });
  return id;
}

/** A fresh variable under `scope` (a project or pipeline path), so each caller's DELETE finds one. */
async function variableKey(scope: string): Promise<string> {
  const key = `WALK_${crypto.randomUUID().slice(0, 8).replace(/-/g, "_")}`;
  await t.call("PUT", `${scope}/variables/${key}`, { token: owner, body: { value: "walk-secret", secret: true } });
  return key;
}
