// Bitbucket Cloud (docs/any-git.md "Bitbucket Cloud"): an integration's catalogue from the host
// stand-in's /2.0/repositories/{workspace}?role=member (paged by `next`), signed push and pull
// request deliveries replayed from tests/fixtures/webhooks/bitbucket (assembled from Atlassian's
// documented payloads, see SOURCES.md), and build statuses back to the stand-in.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { bootstrapOwner, createTestApp, type TestApp } from "../helpers/app.ts";
import { buildsOf, expectDeliveryBuilt, FORK_PULL_REQUEST_NOT_BUILT, projectBuildingEverything, reportedStatuses } from "../helpers/deliveries.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { findRepositoriesByExternalId } from "../../lib/integrations/repositories.ts";
import { cloneCredentials } from "../../lib/runners/protocol.ts";

const fixture = (file: string) => readFileSync(join(resolve(import.meta.dir, "../fixtures/webhooks/bitbucket"), file), "utf8");
const SECRET = "bitbucket-hook-secret-for-tests";
const REPO_UUID = "{673a6070-3421-46c9-9d48-90745f7bfe8e}";
const sign = (secret: string, body: string) => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

let t: TestApp;
let host: HostApiStandIn;
let owner: string;
let project: { id: string; pipeline: string };

const deliver = (event: string, body: string, headers: Record<string, string> = {}) =>
  t.call("POST", "/v1/webhooks/bitbucket", {
    raw: body,
    contentType: "application/json",
    headers: { "x-event-key": event, "x-request-uuid": crypto.randomUUID(), "x-hub-signature": sign(SECRET, body), ...headers },
  });

beforeAll(async () => {
  t = await createTestApp();
  host = await startHostApiStandIn();
  host.bitbucket.repos.push(
    { id: 1, uuid: REPO_UUID, full_name: "team_name/repo_name", default_branch: "master", private: true },
    { id: 2, uuid: "{11111111-2222-4333-8444-555555555555}", full_name: "team_name/other", default_branch: "main", private: false },
    { id: 3, uuid: "{66666666-7777-4888-9999-000000000000}", full_name: "team_name/third", default_branch: "develop", private: true },
    { id: 4, uuid: "{b9c1f4a8-2d3e-4f5a-8b6c-7d8e9f0a1b2c}", full_name: "mallory/repo_name", default_branch: "master", private: false },
  );
  owner = await bootstrapOwner(t);
});

afterAll(async () => {
  await host.stop();
  t.close();
});

describe("Bitbucket Cloud", () => {
  /** An integration on the stand-in's Bitbucket API, signed in with `fields` (a workspace and its credentials). */
  const integrate = (name: string, fields: Record<string, string>) =>
    t.call("POST", "/v1/integrations", { token: owner, body: { provider: "bitbucket", name, api_url: `${host.url}/2.0`, ...fields, webhook_secret: SECRET } });

  test("an integration needs a workspace and one way to sign in", async () => {
    const none = await t.call("POST", "/v1/integrations", {
      token: owner,
      body: { provider: "bitbucket", name: "BB", workspace: "team_name", webhook_secret: SECRET },
    });
    expect(none.status).toBe(400);
    expect(none.body).toMatchObject({
      code: "invalid_request",
      details: [{ path: "body.access_token", message: "give either access_token, or username and app_password" }],
    });
    const noWorkspace = await t.call("POST", "/v1/integrations", {
      token: owner,
      body: { provider: "bitbucket", name: "BB", access_token: "x", webhook_secret: SECRET },
    });
    expect(noWorkspace.status).toBe(400);
    expect(noWorkspace.body.details[0].path).toBe("body.workspace");
  });

  test("the catalogue is the workspace's repositories (role=member), following `next`", async () => {
    const res = await integrate("Bitbucket", { workspace: "team_name", access_token: host.bitbucket.token });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      integration: { provider: "bitbucket", api_url: `${host.url}/2.0`, web_url: "https://bitbucket.org/team_name" },
      repositories_synced: 3,
      sync_error: null,
    });
    expect(JSON.stringify(res.body)).not.toContain(host.bitbucket.token);
    const listed = host.requests.filter((r) => r.path.startsWith("/2.0/repositories/team_name?"));
    expect(listed.map((r) => r.path)).toEqual([
      "/2.0/repositories/team_name?role=member&pagelen=100",
      "/2.0/repositories/team_name?role=member&pagelen=100&page=2",
    ]);
    expect(listed[0]!.headers.authorization).toBe(`Bearer ${host.bitbucket.token}`);
    const repos = (await t.call("GET", "/v1/integration-repositories?q=team_name/repo_name", { token: owner })).body.repositories;
    expect(repos[0]).toMatchObject({
      provider: "bitbucket",
      external_id: REPO_UUID,
      full_name: "team_name/repo_name",
      default_branch: "master",
      clone_url: "https://bitbucket.example.test/team_name/repo_name.git",
    });
    project = await projectBuildingEverything(t, owner, repos[0].id);
  });

  test("an app password works too, sent as HTTP Basic, and runners clone with it", async () => {
    const res = await integrate("BB app password", {
      workspace: "mallory",
      username: host.bitbucket.username,
      app_password: host.bitbucket.appPassword,
    });
    expect(res.body).toMatchObject({ repositories_synced: 1, sync_error: null });
    const [repo] = await findRepositoriesByExternalId(t.ctx.db, "bitbucket", "{b9c1f4a8-2d3e-4f5a-8b6c-7d8e9f0a1b2c}");
    expect(await cloneCredentials(t.ctx, repo!)).toEqual({ username: host.bitbucket.username, password: host.bitbucket.appPassword });
    const [main] = await findRepositoriesByExternalId(t.ctx.db, "bitbucket", REPO_UUID);
    expect(await cloneCredentials(t.ctx, main!)).toEqual({ username: "x-token-auth", password: host.bitbucket.token });
  });

  test("a signed repo:push builds push.changes[].new on its branch", async () => {
    const res = await deliver("repo:push", fixture("repo_push.json"));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, duplicate: false, builds: [{ pipeline_id: project.pipeline }] });
    expect((await buildsOf(t, owner, project.id)).map((b) => [b.branch, b.commit_sha, b.trigger_event])).toEqual([
      ["name-of-branch", "709d658dc5b6d6afcd46049c2f332ee3f515a67d", "push"],
    ]);
  });

  test.each([
    ["repo:push", "repo_push__tag_created.json", 1, null],
    ["repo:push", "repo_push__branch_deleted.json", 0, "refs/heads/feature/old was deleted"],
    ["pullrequest:created", "pullrequest_created.json", 1, null],
    ["pullrequest:updated", "pullrequest_updated.json", 1, null],
    ["pullrequest:fulfilled", "pullrequest_fulfilled", 0, 'Bitbucket event "pullrequest:fulfilled" does not trigger builds'],
    ["pullrequest:created", "pullrequest_created__from_fork.json", 0, FORK_PULL_REQUEST_NOT_BUILT],
  ] as const)("%s %s builds %d", async (event, file, builds, reason) => {
    // A merged pull request: the updated payload in the state Bitbucket gives it then.
    const body = file === "pullrequest_fulfilled" ? fixture("pullrequest_updated.json").replace('"state": "OPEN"', '"state": "MERGED"') : fixture(file);
    await expectDeliveryBuilt(t, owner, await deliver(event, body), { host: "bitbucket", builds, reason });
  });

  test("a tag push builds the tag, a pull request builds its source commit against the destination branch", async () => {
    const builds = await buildsOf(t, owner, project.id);
    expect(builds.filter((b) => b.trigger_event === "tag").map((b) => [b.branch, b.commit_sha])).toEqual([
      ["v1.0.0", "709d658dc5b6d6afcd46049c2f332ee3f515a67d"],
    ]);
    expect(builds.filter((b) => b.trigger_event === "push").map((b) => b.branch)).toEqual(["name-of-branch"]);
    expect(
      builds
        .filter((b) => b.trigger_event === "pull_request")
        .map((b) => [b.branch, b.commit_sha])
        .sort(),
    ).toEqual([
      ["master", "a8c3e1f0b7d2"],
      ["master", "d3022fc0ca3d"],
    ]);
  });

  test("the same body under another X-Request-UUID builds again (a tag pushed again at the same commit is byte-identical)", async () => {
    const body = fixture("repo_push__tag_created.json");
    expect((await deliver("repo:push", body)).body.builds).toHaveLength(1);
  });

  test("the same X-Request-UUID again is a duplicate and builds nothing", async () => {
    const body = fixture("repo_push.json").replace("new commit message", "once");
    const first = await deliver("repo:push", body, { "x-request-uuid": "8f0c2b5e-1d2a-4b3c-9d4e-5f6a7b8c9d0e" });
    const again = await deliver("repo:push", body.replace("once", "once again"), { "x-request-uuid": "8f0c2b5e-1d2a-4b3c-9d4e-5f6a7b8c9d0e" });
    expect([first.body.builds.length, again.body.duplicate, again.body.builds]).toEqual([1, true, []]);
  });

  test("a wrong or missing signature is refused before anything is built, and logged", async () => {
    const before = (await buildsOf(t, owner, project.id)).length;
    const body = fixture("repo_push.json");
    const wrong = await deliver("repo:push", body, { "x-hub-signature": sign("not-the-secret-at-all", body) });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ code: "webhook_signature_invalid", message: "X-Hub-Signature does not match the webhook secret." });
    const bare = await deliver("repo:push", body, { "x-hub-signature": sign(SECRET, body).slice("sha256=".length) });
    expect(bare.body.code).toBe("webhook_signature_invalid");
    const missing = await t.call("POST", "/v1/webhooks/bitbucket", { raw: body, contentType: "application/json", headers: { "x-event-key": "repo:push" } });
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({
      code: "webhook_signature_missing",
      message: "Bitbucket deliveries must carry X-Hub-Signature; set the integration's webhook secret as the webhook's secret.",
    });
    expect((await buildsOf(t, owner, project.id)).length).toBe(before);
    const rejected = (
      (await t.call("GET", "/v1/webhook-deliveries?limit=200", { token: owner })).body.deliveries as { host: string; result: string; reason: string }[]
    ).filter((d) => d.host === "bitbucket" && d.result === "rejected");
    expect(rejected.map((d) => d.reason)).toContain(
      `the signature does not match the webhook secret of any Bitbucket integration that has repository ${REPO_UUID}`,
    );
  });

  test("a signed body that is not a Bitbucket payload is 400 invalid_payload", async () => {
    const body = JSON.stringify({ repository: { uuid: REPO_UUID }, push: { changes: "all" } });
    const res = await deliver("repo:push", body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: "invalid_payload", details: [{ path: "body.push.changes", message: expect.any(String) }] });
  });

  test("build statuses go back through POST /2.0/repositories/{workspace}/{repo_slug}/commit/{sha}/statuses/build", async () => {
    const statuses = await reportedStatuses(t, host, "/2.0/repositories/team_name/repo_name/commit/");
    expect(statuses.map((r) => r.path)).toContain("/2.0/repositories/team_name/repo_name/commit/709d658dc5b6d6afcd46049c2f332ee3f515a67d/statuses/build");
    expect(statuses[0]!.headers.authorization).toBe(`Bearer ${host.bitbucket.token}`);
    expect(statuses[0]!.body).toMatchObject({
      state: "INPROGRESS",
      key: "roost/all",
      name: "roost/all",
      url: expect.stringMatching(/^https:\/\/ci\.example\.test\/v1\/builds\//),
    });
  });
});
