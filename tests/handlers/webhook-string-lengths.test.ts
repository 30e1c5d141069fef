// The strings a webhook payload brings have no length limit (a body may be 25 MB); Roost bounds
// the ones it keeps (docs/webhooks.md "Limits"): a branch name over the 255 characters
// POST /v1/projects/{id}/builds takes builds nothing and says why, never cut (that would build
// another branch); an actor's name, only shown, is cut at 1,000 characters like a changelog line's.
import { describe, expect, test } from "bun:test";
import type { TestApp } from "../helpers/app.ts";
import {
  SHA_A,
  createGitlabIntegration,
  createPipeline,
  createProject,
  fixturePerFile,
  signedAcmePush,
  startCiFixture,
  type CiFixture,
} from "../helpers/ci.ts";
import { buildsOf, deliveryOf, theOneBuild } from "../helpers/deliveries.ts";

let t: TestApp, owner: string, projectId: string, host: CiFixture["host"];
fixturePerFile(
  () => startCiFixture(),
  (fixture) => ({ t, owner, projectId, host } = fixture),
);

const sendGithub = (push: { body: string; headers: Record<string, string> }) =>
  t.call("POST", "/v1/webhooks/github", { raw: push.body, contentType: "application/json", headers: push.headers, peer: "140.82.112.1" });

describe("a GitHub push's branch name", () => {
  test("of 100 KB builds nothing: answered 200, the delivery log says why, no build", async () => {
    await createPipeline(t, owner, projectId, { name: "every-branch", trigger_config: { events: ["push"], branches: ["**"] } });
    const branch = `feature/${"x".repeat(100 * 1024)}`;
    const before = (await buildsOf(t, owner, projectId)).length;

    const res = await sendGithub(await signedAcmePush(branch, SHA_A, "long-branch-1"));
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { ok: true, duplicate: false, builds: [] } });
    const delivery = await deliveryOf(t, owner, res.body.delivery_id);
    expect(delivery).toMatchObject({ result: "ignored", reason: `the branch name is ${branch.length} characters, over 255: not built` });
    expect((await buildsOf(t, owner, projectId)).length).toBe(before);
  });

  test("of 255 characters, the longest POST /builds takes, builds; 256 is refused there too", async () => {
    const branch = `release/${"y".repeat(255 - "release/".length)}`;
    const build = await theOneBuild(t, owner, await sendGithub(await signedAcmePush(branch, SHA_A, "long-branch-2")));
    expect(build).toMatchObject({ branch, trigger_ref: `refs/heads/${branch}` });

    const api = await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { branch: `${branch}z`, commit_sha: SHA_A } });
    expect(api.status).toBe(400);
    expect(api.body.code).toBe("invalid_request");
  });
});

describe("a GitLab push's user name", () => {
  test("of 100 KB builds, its trigger_actor cut at 1,000 characters ending in …", async () => {
    await createGitlabIntegration(t, owner, host);
    const gitlabProject = (await createProject(t, owner, "group/mobile")).id as string;
    await createPipeline(t, owner, gitlabProject, { name: "main", trigger_config: { events: ["push"], branches: ["main"] } });
    const token = (await t.call("POST", `/v1/projects/${gitlabProject}/webhook-token`, { token: owner })).body.token as string;
    const user = "u".repeat(100 * 1024);
    // https://docs.gitlab.com/user/project/integrations/webhook_events/#push-events
    const body = JSON.stringify({
      object_kind: "push",
      ref: "refs/heads/main",
      before: "0".repeat(40),
      after: SHA_A,
      checkout_sha: SHA_A,
      user_username: user,
      user_name: user,
      project_id: 77,
      project: { id: 77, path_with_namespace: "group/mobile" },
      commits: [{ id: SHA_A, message: "a commit", author: { name: "dev" } }],
    });
    const res = await t.call("POST", "/v1/webhooks/gitlab", {
      raw: body,
      contentType: "application/json",
      headers: { "x-gitlab-event": "Push Hook", "x-gitlab-event-uuid": "long-user-1", "x-gitlab-token": token },
      peer: "34.74.90.64",
    });
    const build = await theOneBuild(t, owner, res);
    expect(build.branch).toBe("main");
    expect(build.trigger_actor).toBe(`${"u".repeat(999)}…`);
  });
});
