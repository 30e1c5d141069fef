// The authorization table (docs/authorization.md) walked against every route: each route with
// no credential and with every instance role and project role, each expected to be allowed or
// refused. A route missing from RULES fails the test, so no endpoint ships without a rule.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bootstrapOwner, createTestApp, loginCapability, userWithRole, type TestApp } from "../helpers/app.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, createGithubIntegration, createPipeline, createProject, repositoryId, seedStandIn } from "../helpers/ci.ts";
import { routes } from "../../handlers/routes.ts";
import { raiseIncident } from "../../lib/incidents.ts";
import { insertDelivery } from "../../lib/webhooks/deliveries.ts";
import { artifactFile } from "../../lib/artifacts.ts";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

type Who = "none" | "developer" | "maintainer" | "admin" | "owner" | "project_viewer" | "project_developer" | "project_maintainer";
const EVERYONE: Who[] = ["none", "developer", "maintainer", "admin", "owner", "project_viewer", "project_developer", "project_maintainer"];

/** Who may call each route. Project members hold the instance role developer (project_maintainer holds maintainer). */
const RULES: Record<string, { allowed: Who[]; request: () => Promise<{ path: string; body?: unknown }> }> = {};
const instance = (min: "user" | "maintainer" | "admin"): Who[] =>
  ({
    user: ["developer", "maintainer", "admin", "owner", "project_viewer", "project_developer", "project_maintainer"] as Who[],
    maintainer: ["maintainer", "admin", "owner", "project_maintainer"] as Who[],
    admin: ["admin", "owner"] as Who[],
  })[min];
const project = (min: "viewer" | "developer" | "maintainer"): Who[] =>
  ({
    viewer: ["admin", "owner", "project_viewer", "project_developer", "project_maintainer"] as Who[],
    developer: ["admin", "owner", "project_developer", "project_maintainer"] as Who[],
    maintainer: ["admin", "owner", "project_maintainer"] as Who[],
  })[min];

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

beforeAll(async () => {
  t = await createTestApp();
  host = await startHostApiStandIn();
  seedStandIn(host);
  owner = await bootstrapOwner(t);
  await createGithubIntegration(t, owner, host);
  const p = await createProject(t, owner);
  projectId = p.id;
  pipelineId = (await createPipeline(t, owner, projectId)).id;
  buildId = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, commit_sha: SHA_A } })).body.build.id;
  incidentId = (await raiseIncident(t.db, t.clock.now(), { severity: "info", reason: "walk", message: "m", resource_kind: "test", resource_id: "x", resource_name: "x" })).id;
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
  }

  const rules: [string, Who[], () => Promise<{ path: string; body?: unknown }>][] = [
    ["GET /v1/openapi.json", EVERYONE, async () => ({ path: "/v1/openapi.json" })],
    ["GET /healthz", EVERYONE, async () => ({ path: "/healthz" })],
    ["GET /readyz", EVERYONE, async () => ({ path: "/readyz" })],
    ["GET /metrics", EVERYONE, async () => ({ path: "/metrics" })], // loopback peer without ROOST_METRICS_TOKEN (tests/handlers/operations.test.ts covers the rest)
    ["GET /v1/setup/status", EVERYONE, async () => ({ path: "/v1/setup/status" })],
    ["POST /v1/setup/preferences", [], async () => ({ path: "/v1/setup/preferences", body: { runtime_mode: "local" } })],
    ["POST /v1/setup/owner", [], async () => ({ path: "/v1/setup/owner", body: { email: "x@example.test" } })],
    ["POST /v1/setup/complete", [], async () => ({ path: "/v1/setup/complete" })],
    ["POST /v1/auth/local/login", EVERYONE, async () => ({ path: "/v1/auth/local/login", body: { email: "owner@example.test", recovery_capability: await loginCapability(t) } })],
    ["POST /v1/auth/logout", instance("user"), async () => ({ path: "/v1/auth/logout" })],
    // External Access sign-in on this Local Only instance: OIDC answers 500 oidc_not_configured to anyone
    // (not a refusal); trusted-proxy login is 403 mode_restricted for everyone (tests/handlers/trusted-proxy-login.test.ts).
    ["GET /v1/auth/oidc/start", EVERYONE, async () => ({ path: "/v1/auth/oidc/start" })],
    ["POST /v1/auth/oidc/callback", EVERYONE, async () => ({ path: "/v1/auth/oidc/callback", body: { code: "c", state: "s" } })],
    ["POST /v1/auth/trusted-proxy/login", [], async () => ({ path: "/v1/auth/trusted-proxy/login" })],
    ["PUT /v1/setup/oidc", [], async () => ({ path: "/v1/setup/oidc", body: { issuer: "https://idp.example.test", client_id: "c", client_secret: "s", redirect_uris: ["https://ci.example.test/cb"] } })],
    ["PUT /v1/setup/trusted-proxy", [], async () => ({ path: "/v1/setup/trusted-proxy", body: { trusted_peers: ["10.0.0.5"] } })],
    ["GET /v1/settings/oidc", instance("admin"), async () => ({ path: "/v1/settings/oidc" })],
    ["PUT /v1/settings/oidc", instance("admin"), async () => ({ path: "/v1/settings/oidc", body: { issuer: "https://idp.example.test", client_id: "c", client_secret: "s", redirect_uris: ["https://ci.example.test/cb"] } })],
    ["GET /v1/settings/trusted-proxy", instance("admin"), async () => ({ path: "/v1/settings/trusted-proxy" })],
    ["PUT /v1/settings/trusted-proxy", instance("admin"), async () => ({ path: "/v1/settings/trusted-proxy", body: { trusted_peers: ["10.0.0.5"] } })],
    ["GET /v1/users/me", instance("user"), async () => ({ path: "/v1/users/me" })],
    ["GET /v1/users", instance("admin"), async () => ({ path: "/v1/users" })],
    ["POST /v1/users", instance("admin"), async () => ({ path: "/v1/users", body: { email: `${crypto.randomUUID()}@example.test`, role: "developer" } })],
    ["PATCH /v1/users/{user_id}", instance("admin"), async () => ({ path: `/v1/users/${(await userWithRole(t, owner, "developer")).id}`, body: { role: "developer" } })],
    ["DELETE /v1/users/{user_id}", instance("admin"), async () => ({ path: `/v1/users/${(await userWithRole(t, owner, "developer")).id}` })],
    ["GET /v1/api-tokens", instance("user"), async () => ({ path: "/v1/api-tokens" })],
    ["POST /v1/api-tokens", instance("user"), async () => ({ path: "/v1/api-tokens", body: { name: "walk", role: "developer" } })],
    ["DELETE /v1/api-tokens/{token_id}", instance("user"), async () => ({ path: "/v1/api-tokens/unknown" })],
    ["POST /v1/integrations", instance("admin"), async () => ({ path: "/v1/integrations", body: { provider: "gitlab", name: "walk", api_url: host.url, access_token: host.gitlab.token } })],
    ["GET /v1/integrations", instance("maintainer"), async () => ({ path: "/v1/integrations" })],
    ["POST /v1/integrations/{integration_id}/sync", instance("admin"), async () => ({ path: "/v1/integrations/unknown/sync" })],
    ["DELETE /v1/integrations/{integration_id}", instance("admin"), async () => ({ path: "/v1/integrations/unknown" })],
    ["GET /v1/integration-repositories", instance("maintainer"), async () => ({ path: "/v1/integration-repositories" })],
    ["POST /v1/projects", instance("maintainer"), async () => ({ path: "/v1/projects", body: { repository_id: await repositoryId(t, owner, "acme/website") } })],
    ["GET /v1/projects", instance("user"), async () => ({ path: "/v1/projects" })],
    ["GET /v1/projects/{project_id}", project("viewer"), async () => ({ path: `/v1/projects/${projectId}` })],
    ["PATCH /v1/projects/{project_id}", project("maintainer"), async () => ({ path: `/v1/projects/${projectId}`, body: { description: "walked" } })],
    ["DELETE /v1/projects/{project_id}", project("maintainer"), async () => ({ path: `/v1/projects/${projectId}` })],
    ["GET /v1/projects/{project_id}/members", project("viewer"), async () => ({ path: `/v1/projects/${projectId}/members` })],
    ["PUT /v1/projects/{project_id}/members/{user_id}", project("maintainer"), async () => ({ path: `/v1/projects/${projectId}/members/${developerId}`, body: { role: "developer" } })],
    [
      "DELETE /v1/projects/{project_id}/members/{user_id}",
      project("maintainer"),
      async () => {
        const member = await userWithRole(t, owner, "developer");
        await t.call("PUT", `/v1/projects/${projectId}/members/${member.id}`, { token: owner, body: { role: "viewer" } });
        return { path: `/v1/projects/${projectId}/members/${member.id}` };
      },
    ],
    ["POST /v1/projects/{project_id}/pipelines", project("maintainer"), async () => ({ path: `/v1/projects/${projectId}/pipelines`, body: { name: `walk-${crypto.randomUUID()}` } })],
    ["GET /v1/projects/{project_id}/pipelines", project("viewer"), async () => ({ path: `/v1/projects/${projectId}/pipelines` })],
    ["GET /v1/pipelines/{pipeline_id}", project("viewer"), async () => ({ path: `/v1/pipelines/${pipelineId}` })],
    ["PATCH /v1/pipelines/{pipeline_id}", project("maintainer"), async () => ({ path: `/v1/pipelines/${pipelineId}`, body: { enabled: true } })],
    ["DELETE /v1/pipelines/{pipeline_id}", project("maintainer"), async () => ({ path: `/v1/pipelines/${pipelineId}` })],
    ["POST /v1/projects/{project_id}/builds", project("developer"), async () => ({ path: `/v1/projects/${projectId}/builds`, body: { pipeline_id: pipelineId, commit_sha: SHA_A } })],
    ["GET /v1/projects/{project_id}/builds", project("viewer"), async () => ({ path: `/v1/projects/${projectId}/builds` })],
    ["GET /v1/pipelines/{pipeline_id}/builds", project("viewer"), async () => ({ path: `/v1/pipelines/${pipelineId}/builds` })],
    ["GET /v1/builds/{build_id}", project("viewer"), async () => ({ path: `/v1/builds/${buildId}` })],
    ["POST /v1/builds/{build_id}/rerun", project("developer"), async () => ({ path: `/v1/builds/${buildId}/rerun` })],
    ["POST /v1/builds/{build_id}/cancel", project("developer"), async () => ({ path: `/v1/builds/${buildId}/cancel` })],
    // The receivers authenticate by signature or per-repository token, never by bearer: without one, everybody is refused.
    ["POST /v1/webhooks/github", [], async () => ({ path: "/v1/webhooks/github", body: { zen: "x" } })],
    ["POST /v1/webhooks/gitlab", [], async () => ({ path: "/v1/webhooks/gitlab", body: { object_kind: "push", project: { id: 1 } } })],
    ["POST /v1/projects/{project_id}/webhook-token", project("maintainer"), async () => ({ path: `/v1/projects/${projectId}/webhook-token` })],
    ["GET /v1/projects/{project_id}/webhook-deliveries", project("maintainer"), async () => ({ path: `/v1/projects/${projectId}/webhook-deliveries` })],
    ["GET /v1/webhook-deliveries", instance("admin"), async () => ({ path: "/v1/webhook-deliveries" })],
    [
      "GET /v1/webhook-deliveries/{delivery_id}",
      project("maintainer"),
      async () => {
        const id = crypto.randomUUID().replace(/-/g, "").slice(0, 20);
        await insertDelivery(t.db, { id, host: "github", delivery_id: "d", event: "push", action: "", verified: true, result: "ignored", reason: "walk", repository_external_id: null, repository_full_name: null, repository_id: null, project_id: projectId, commit_sha: null, decisions: [], duplicate_of: null, received_at: 1, body: null });
        return { path: `/v1/webhook-deliveries/${id}` };
      },
    ],
    ["GET /v1/builds/{build_id}/logs", project("viewer"), async () => ({ path: `/v1/builds/${buildId}/logs` })],
    ["GET /v1/builds/{build_id}/artifacts", project("viewer"), async () => ({ path: `/v1/builds/${buildId}/artifacts` })],
    [
      "GET /v1/builds/{build_id}/artifacts/{artifact_id}",
      project("viewer"),
      async () => {
        // A stored artifact of the walk's build (row and file), so allowed callers get 200.
        const id = crypto.randomUUID().replace(/-/g, "").slice(0, 20);
        await t.db.execute({ sql: "INSERT INTO artifacts (id, build_id, job_id, path, size, sha256, created_at) VALUES (?, ?, 'j', ?, 2, 'x', 1)", args: [id, buildId, `${id}.apk`] });
        mkdirSync(join(t.dataDir, "artifacts", buildId), { recursive: true });
        writeFileSync(artifactFile(t.dataDir, buildId, id), "ok");
        return { path: `/v1/builds/${buildId}/artifacts/${id}` };
      },
    ],
    ["PUT /v1/runners/{runner_id}/jobs/{job_id}/artifacts", [], async () => ({ path: `/v1/runners/${await runnerId()}/jobs/x/artifacts?path=a.apk` })],
    ["POST /v1/builds/{build_id}/stream-token", project("viewer"), async () => ({ path: `/v1/builds/${buildId}/stream-token` })],
    // Only a stream token (?token=) opens a stream; a bearer credential of any role does not.
    ["GET /v1/builds/{build_id}/logs/stream", [], async () => ({ path: `/v1/builds/${buildId}/logs/stream` })],
    ["POST /v1/runners", instance("admin"), async () => ({ path: "/v1/runners", body: { name: "walk" } })],
    ["GET /v1/runners", instance("admin"), async () => ({ path: "/v1/runners" })],
    ["POST /v1/runners/{runner_id}/token", instance("admin"), async () => ({ path: `/v1/runners/${await runnerId()}/token` })],
    ["DELETE /v1/runners/{runner_id}", instance("admin"), async () => ({ path: `/v1/runners/${await runnerId()}` })],
    // The runner protocol takes the runner's own token only: no user credential works.
    ["POST /v1/runners/{runner_id}/connect", [], async () => ({ path: `/v1/runners/${await runnerId()}/connect`, body: { capabilities: { os: "linux", arch: "x64" } } })],
    ["POST /v1/runners/{runner_id}/jobs/claim", [], async () => ({ path: `/v1/runners/${await runnerId()}/jobs/claim`, body: { claim_id: "walk-claim-1", wait_seconds: 0 } })],
    ["POST /v1/runners/{runner_id}/heartbeat", [], async () => ({ path: `/v1/runners/${await runnerId()}/heartbeat`, body: {} })],
    ["PUT /v1/runners/{runner_id}/jobs/{job_id}/steps/{step}", [], async () => ({ path: `/v1/runners/${await runnerId()}/jobs/x/steps/build`, body: { status: "running", started_at: 1 } })],
    ["POST /v1/runners/{runner_id}/jobs/{job_id}/logs", [], async () => ({ path: `/v1/runners/${await runnerId()}/jobs/x/logs`, body: { first_line: 0, lines: [] } })],
    ["POST /v1/runners/{runner_id}/jobs/{job_id}/finish", [], async () => ({ path: `/v1/runners/${await runnerId()}/jobs/x/finish`, body: { status: "succeeded", exit_code: 0, line_count: 0 } })],
    ["GET /v1/operator-incidents", instance("admin"), async () => ({ path: "/v1/operator-incidents" })],
    ["POST /v1/operator-incidents/{id}/read", instance("admin"), async () => ({ path: `/v1/operator-incidents/${incidentId}/read` })],
  ];
  for (const [key, allowed, request] of rules) RULES[key] = { allowed, request };
});
afterAll(async () => {
  t.close();
  await host.stop();
});

describe("the authorization table", () => {
  test("every route in the route table has a rule here", () => {
    const missing = routes.map((r) => `${r.method} ${r.path}`).filter((k) => !RULES[k]);
    expect(missing).toEqual([]);
  });

  test("every route, every caller: allowed or refused as the table says", async () => {
    const mismatches: string[] = [];
    for (const route of routes) {
      const key = `${route.method} ${route.path}`;
      const rule = RULES[key];
      if (!rule) continue;
      for (const who of EVERYONE) {
        // Destructive calls run on their own fixtures so later callers still find something to act on.
        const { path, body } = await rule.request();
        const token = who === "none" ? undefined : tokens[who];
        const res = await t.call(route.method, path, { token, body });
        const projectScoped = /\{(project_id|pipeline_id|build_id|delivery_id)\}/.test(route.path);
        const refused = res.status === 401 || res.status === 403 || (projectScoped && res.status === 404 && who !== "admin" && who !== "owner") || (route.auth === "setup" && res.status === 409);
        const expected = rule.allowed.includes(who);
        if (refused === expected) mismatches.push(`${key} as ${who}: expected ${expected ? "allowed" : "refused"}, got ${res.status} ${res.text.slice(0, 120)}`);
        // Re-create what a destructive call removed, and sessions that logout ended.
        if (!refused && route.method === "DELETE" && route.path === "/v1/projects/{project_id}") {
          projectId = (await createProject(t, owner)).id;
          pipelineId = (await createPipeline(t, owner, projectId)).id;
          buildId = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, commit_sha: SHA_A } })).body.build.id;
          for (const [w, role] of [["project_viewer", "viewer"], ["project_developer", "developer"], ["project_maintainer", "maintainer"]] as const) {
            const me = await t.call("GET", "/v1/users/me", { token: tokens[w] });
            await t.call("PUT", `/v1/projects/${projectId}/members/${me.body.user.id}`, { token: owner, body: { role } });
          }
        }
        if (!refused && route.method === "DELETE" && route.path === "/v1/pipelines/{pipeline_id}") {
          pipelineId = (await createPipeline(t, owner, projectId)).id;
          buildId = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, commit_sha: SHA_A } })).body.build.id;
        }
        if (!refused && route.path === "/v1/builds/{build_id}/cancel") {
          buildId = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, commit_sha: SHA_A } })).body.build.id;
        }
        // Logout ends the caller's session, and a login ends the session presented with it: sign in again.
        if (!refused && (route.path === "/v1/auth/logout" || route.path === "/v1/auth/local/login") && who !== "none") await signIn(who);
      }
    }
    expect(mismatches).toEqual([]);
  });
});

async function runnerId(): Promise<string> {
  return (await t.call("POST", "/v1/runners", { token: owner, body: { name: "walk" } })).body.runner.id;
}

async function signIn(who: Who): Promise<void> {
  const res = await t.call("POST", "/v1/auth/local/login", { body: { email: emails[who], recovery_capability: await loginCapability(t) } });
  tokens[who] = res.body.session_token;
  if (who === "owner") owner = res.body.session_token;
}

