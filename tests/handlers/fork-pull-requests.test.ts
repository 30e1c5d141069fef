// Pull requests from forks, through a signed GitHub delivery (docs/secrets.md, docs/pipelines.md):
// ignored unless the project opts in with settings.build_fork_pull_requests, as the hosts' own CI
// does by default; when it does, the build runs with no secret at all.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { bootstrapOwner, createTestApp, type TestApp } from "../helpers/app.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { createGithubIntegration, repositoryId } from "../helpers/ci.ts";
import { expectDeliveryBuilt, FORK_PULL_REQUEST_NOT_BUILT } from "../helpers/deliveries.ts";

const SECRET = "github-app-webhook-secret-for-fork-tests";
const DEPLOY_SECRET = "the-deploy-secret-value";
let t: TestApp;
let host: HostApiStandIn;
let owner: string;
let projectId = "";

/** GitHub's published pull_request.opened payload, with its head moved to another repository (no published fork payload exists). */
function forkPullRequest(headSha: string): string {
  const payload = JSON.parse(readFileSync(join(resolve(import.meta.dir, "../fixtures/webhooks/github"), "pull_request__opened.json"), "utf8"));
  payload.pull_request.head.sha = headSha; // each delivery a new commit (GitHub bodies of distinct events differ)
  payload.pull_request.head.repo.id = 999_999;
  payload.pull_request.head.repo.full_name = "mallory/Hello-World";
  return JSON.stringify(payload);
}

async function deliver(body: string) {
  const headers = { "x-github-event": "pull_request", "x-github-delivery": crypto.randomUUID(), "x-hub-signature-256": await sign(SECRET, body) };
  return t.call("POST", "/v1/webhooks/github", { raw: body, contentType: "application/json", headers, peer: "140.82.112.1" });
}

beforeAll(async () => {
  t = await createTestApp();
  host = await startHostApiStandIn();
  host.github.repos.push({ id: 186853002, full_name: "Codertocat/Hello-World", default_branch: "master", private: false });
  host.github.installationId = "1"; // the published payloads come from installation 1
  // A fork's build reads the pipeline file at its target branch's head (master), not at the fork's commit.
  host.heads.set("Codertocat/Hello-World@master", "c".repeat(40));
  owner = await bootstrapOwner(t);
  await createGithubIntegration(t, owner, host, { name: "GitHub", web_url: undefined, webhook_secret: SECRET });
  projectId = (await t.call("POST", "/v1/projects", { token: owner, body: { repository_id: await repositoryId(t, owner, "Codertocat/Hello-World") } })).body
    .project.id;
  await t.call("POST", `/v1/projects/${projectId}/pipelines`, {
    token: owner,
    body: { name: "pr-check", trigger_config: { events: ["pull_request"], branches: ["**"] } },
  });
  await t.call("PUT", `/v1/projects/${projectId}/variables/DEPLOY_TOKEN`, { token: owner, body: { value: DEPLOY_SECRET, secret: true } });
});
afterAll(async () => {
  t.close();
  await host.stop();
});

describe("pull requests from forks", () => {
  test("are ignored by default, and the delivery log says why and how to change it", async () => {
    const res = await deliver(forkPullRequest("1".repeat(40)));
    await expectDeliveryBuilt(t, owner, res, { host: "github", builds: 0, reason: FORK_PULL_REQUEST_NOT_BUILT });
  });

  test("build once the project opts in, and the build's claim carries no secret", async () => {
    const patched = await t.call("PATCH", `/v1/projects/${projectId}`, { token: owner, body: { settings: { build_fork_pull_requests: true } } });
    expect(patched.status).toBe(200);
    const res = await deliver(forkPullRequest("2".repeat(40)));
    expect(res.body.builds).toHaveLength(1);

    const created = await t.call("POST", "/v1/runners", { token: owner, body: { name: "fork-runner" } });
    const runner = created.body.runner.id;
    const token = created.body.token;
    await t.call("POST", `/v1/runners/${runner}/connect`, {
      token,
      body: { capabilities: { os: "linux", arch: "x64", flutter_versions: ["3.24.5"], xcode: null }, version: "test" },
    });
    const claim = await t.call("POST", `/v1/runners/${runner}/jobs/claim`, { token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } });
    expect(claim.status).toBe(201);
    expect(claim.body.job.withheld_secrets).toEqual(["DEPLOY_TOKEN"]);
    expect(claim.body.job.withheld_reason).toBe("this build is of a pull request from a fork");
    expect(claim.text).not.toContain(DEPLOY_SECRET);
  });
});
