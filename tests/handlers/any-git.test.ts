// Any git repository (docs/any-git.md): Gitea/Forgejo integrations (catalogue, signed push and
// pull request deliveries replayed from tests/fixtures/webhooks/gitea, commit statuses to the
// host stand-in), and plain git remotes against a real repository made with git in a temp dir
// (polling, one poll per repository across pollers, the signed generic push webhook).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { bootstrapOwner, createTestApp, type TestApp } from "../helpers/app.ts";
import { git as gitIn } from "../helpers/git.ts";
import { buildsOf, expectDeliveryBuilt, FORK_PULL_REQUEST_NOT_BUILT, projectBuildingEverything, reportedStatuses, theOneBuild } from "../helpers/deliveries.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { pollGitRemotes } from "../../lib/forges/git/poll.ts";
import { openDatabase } from "../../lib/db/client.ts";
import { findIntegration } from "../../lib/integrations/store.ts";
import { findRepositoriesByExternalId, upsertRepositories } from "../../lib/integrations/repositories.ts";
import { cloneCredentials } from "../../lib/runners/protocol.ts";

const fixture = (file: string) => readFileSync(join(resolve(import.meta.dir, "../fixtures/webhooks/gitea"), file), "utf8");
const GITEA_SECRET = "gitea-hook-secret-for-tests";
const GIT_SECRET = "plain-git-webhook-secret-1234";
const hex = (secret: string, body: string) => createHmac("sha256", secret).update(body).digest("hex");

let t: TestApp;
let host: HostApiStandIn;
let owner: string;
let remote: string;

const git = (...args: string[]) => gitIn(remote, ...args);
function commit(message: string): string {
  writeFileSync(join(remote, "file.txt"), `${message}\n${Math.random()}\n`);
  git("add", "file.txt");
  git("commit", "-q", "-m", message);
  return git("rev-parse", "HEAD");
}

const deliveriesOf = async (projectId: string) =>
  (await t.call("GET", `/v1/projects/${projectId}/webhook-deliveries?limit=200`, { token: owner })).body.deliveries as {
    host: string;
    result: string;
    reason: string;
    verified: boolean;
  }[];
// Duplicates belong to no project (nothing was decided for one), so they are read from the admin log.
const gitDuplicates = async () =>
  ((await t.call("GET", "/v1/webhook-deliveries?limit=200", { token: owner })).body.deliveries as { host: string; result: string; event: string }[]).filter(
    (d) => d.host === "git" && d.result === "duplicate",
  );

beforeAll(async () => {
  t = await createTestApp({ ROOST_GIT_ALLOW_LOCAL_REMOTES: "true", ROOST_GIT_POLL_INTERVAL_SECONDS: "30" });
  host = await startHostApiStandIn();
  host.gitea.repos.push(
    { id: 140, full_name: "gitea/webhooks", default_branch: "master", private: false },
    { id: 141, full_name: "mallory/webhooks", default_branch: "master", private: false },
    { id: 7, full_name: "team/other", default_branch: "main", private: true },
  );
  owner = await bootstrapOwner(t);
  remote = mkdtempSync(join(tmpdir(), "roost-remote-"));
  git("init", "-q", "-b", "main");
});

afterAll(async () => {
  await host.stop();
  t.close();
  rmSync(remote, { recursive: true, force: true });
});

describe("Gitea and Forgejo", () => {
  let project: { id: string; pipeline: string };
  const gitea = (event: string, body: string, headers: Record<string, string> = {}) =>
    t.call("POST", "/v1/webhooks/gitea", {
      raw: body,
      contentType: "application/json",
      headers: { "x-gitea-event": event, "x-gitea-delivery": crypto.randomUUID(), "x-gitea-signature": hex(GITEA_SECRET, body), ...headers },
    });

  test("an integration syncs its catalogue from /api/v1/user/repos, following the Link header", async () => {
    const res = await t.call("POST", "/v1/integrations", {
      token: owner,
      body: { provider: "gitea", name: "Forgejo", api_url: host.url, access_token: host.gitea.token, webhook_secret: GITEA_SECRET },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ integration: { provider: "gitea", api_url: host.url }, repositories_synced: 3, sync_error: null });
    expect(JSON.stringify(res.body)).not.toContain(host.gitea.token);
    const repos = (await t.call("GET", "/v1/integration-repositories?q=gitea/webhooks", { token: owner })).body.repositories;
    expect(repos[0]).toMatchObject({ provider: "gitea", external_id: "140", full_name: "gitea/webhooks", default_branch: "master" });
    project = await projectBuildingEverything(t, owner, repos[0].id);
  });

  test("a signed push builds the pushed commit on its branch; the Forgejo headers work alike", async () => {
    const res = await gitea("push", fixture("push.json"));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, duplicate: false, builds: [{ pipeline_id: project.pipeline }] });
    const body = fixture("push.json").replace("Webhooks Yay!", "Forgejo too");
    const forgejo = await t.call("POST", "/v1/webhooks/gitea", {
      raw: body,
      contentType: "application/json",
      headers: { "x-forgejo-event": "push", "x-forgejo-delivery": crypto.randomUUID(), "x-forgejo-signature": hex(GITEA_SECRET, body) },
    });
    expect(forgejo.body.builds).toHaveLength(1);
    const builds = await buildsOf(t, owner, project.id);
    expect(builds.map((b) => [b.branch, b.commit_sha, b.trigger_event])).toEqual([
      ["develop", "bffeb74224043ba2feb48d137756c8a9331c449a", "push"],
      ["develop", "bffeb74224043ba2feb48d137756c8a9331c449a", "push"],
    ]);
  });

  test.each([
    ["push", "push__tag_created.json", 1, null],
    ["push", "push__branch_deleted.json", 0, "refs/heads/feature/old was deleted"],
    ["pull_request", "pull_request__opened.json", 1, null],
    ["pull_request", "pull_request__synchronized.json", 1, null],
    ["pull_request", "pull_request__closed.json", 0, 'pull request action "closed" brings no new commit'],
    ["pull_request", "pull_request__opened_from_fork.json", 0, FORK_PULL_REQUEST_NOT_BUILT],
  ] as const)("%s %s builds %d", async (event, file, builds, reason) => {
    await expectDeliveryBuilt(t, owner, await gitea(event, fixture(file)), { host: "gitea", builds, reason });
  });

  test("a push without head_commit (older Gitea and Forgejo versions) builds the commit `after` names", async () => {
    const build = await theOneBuild(t, owner, await gitea("push", fixture("push__without_head_commit.json")));
    expect(build).toMatchObject({
      branch: "develop",
      commit_sha: "bffeb74224043ba2feb48d137756c8a9331c449a",
      trigger_event: "push",
      changelog: "bffeb74 Webhooks Yay! (Gitea)",
    });
  });

  test("a pull request body without pull_request.number builds with the top-level number; with neither it is 400", async () => {
    const build = await theOneBuild(t, owner, await gitea("pull_request", fixture("pull_request__opened_without_pr_number.json")));
    expect(build).toMatchObject({ trigger_event: "pull_request", trigger_ref: "refs/pull/7/head", changelog: "#7 Add a CI badge" });

    const neither = JSON.parse(fixture("pull_request__opened_without_pr_number.json"));
    delete neither.number;
    const refused = await gitea("pull_request", JSON.stringify(neither));
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      code: "invalid_payload",
      message: "The delivery body is not a Gitea webhook payload: body.pull_request.number: Invalid input: neither pull_request.number nor number is given.",
      details: [{ path: "body.pull_request.number", message: "Invalid input: neither pull_request.number nor number is given" }],
    });
  });

  test("the same delivery again is a duplicate and builds nothing", async () => {
    const body = fixture("push.json").replace("Webhooks Yay!", "once");
    const first = await gitea("push", body, { "x-gitea-delivery": "d-1" });
    const again = await gitea("push", body, { "x-gitea-delivery": "d-1" });
    expect([first.body.builds.length, again.body.duplicate, again.body.builds]).toEqual([1, true, []]);
  });

  test("a wrong or missing signature is refused before anything is built, and logged", async () => {
    const before = (await buildsOf(t, owner, project.id)).length;
    const wrong = await gitea("push", fixture("push.json"), { "x-gitea-signature": hex("not-the-secret-at-all", fixture("push.json")) });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ code: "webhook_signature_invalid", message: "X-Gitea-Signature does not match the webhook secret." });
    const missing = await t.call("POST", "/v1/webhooks/gitea", {
      raw: fixture("push.json"),
      contentType: "application/json",
      headers: { "x-gitea-event": "push" },
    });
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({
      code: "webhook_signature_missing",
      message: "Gitea and Forgejo deliveries must carry X-Gitea-Signature; set the integration's webhook secret as the hook's secret.",
    });
    expect((await buildsOf(t, owner, project.id)).length).toBe(before);
  });

  test("a signed body that is not a Gitea payload is 400 invalid_payload", async () => {
    const body = JSON.stringify({ repository: { id: 140 }, ref: 5 });
    const res = await gitea("push", body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: "invalid_payload", details: [{ path: "body.ref", message: expect.any(String) }] });
  });

  test("commit statuses go back through POST /api/v1/repos/{owner}/{repo}/statuses/{sha}", async () => {
    const statuses = await reportedStatuses(t, host, "/api/v1/repos/gitea/webhooks/statuses/");
    expect(statuses.map((r) => r.path)).toContain("/api/v1/repos/gitea/webhooks/statuses/bffeb74224043ba2feb48d137756c8a9331c449a");
    expect(statuses[0]!.headers.authorization).toBe(`token ${host.gitea.token}`);
    expect(statuses[0]!.body).toMatchObject({
      state: "pending",
      context: "roost/all",
      target_url: expect.stringMatching(/^https:\/\/ci\.example\.test\/v1\/builds\//),
    });
  });
});

describe("a plain git remote", () => {
  let project: { id: string; pipeline: string };
  let integrationId: string;
  let first: string;
  const push = (body: Record<string, unknown>, signature?: string | null) => {
    const raw = JSON.stringify(body);
    const headers: Record<string, string> = {};
    if (signature !== null) headers["x-roost-signature-256"] = signature ?? `sha256=${hex(GIT_SECRET, raw)}`;
    return t.call("POST", "/v1/webhooks/git", { raw, contentType: "application/json", headers });
  };

  test("a local path is refused unless ROOST_GIT_ALLOW_LOCAL_REMOTES=true; credentials in the URL are refused", async () => {
    const strict = await createTestApp();
    try {
      const token = await bootstrapOwner(strict);
      const res = await strict.call("POST", "/v1/integrations", { token, body: { provider: "git", name: "local", url: remote } });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        code: "invalid_request",
        message: "The body is not valid: body.url: is a path on this machine, allowed only with ROOST_GIT_ALLOW_LOCAL_REMOTES=true",
        details: [{ path: "body.url", message: "is a path on this machine, allowed only with ROOST_GIT_ALLOW_LOCAL_REMOTES=true" }],
      });
      const inline = await strict.call("POST", "/v1/integrations", {
        token,
        body: { provider: "git", name: "x", url: "https://bob:hunter2@git.example.test/app.git" },
      });
      expect(inline.body.details).toEqual([{ path: "body.url", message: "must not carry credentials: give them as username/password or ssh_private_key" }]);
      const helper = await strict.call("POST", "/v1/integrations", { token, body: { provider: "git", name: "x", url: "ext::sh -c touch% /tmp/pwned" } });
      expect(helper.body.details).toEqual([{ path: "body.url", message: "must not use a remote helper (ext::, fd::)" }]);
    } finally {
      strict.close();
    }
  });

  test("one integration is one repository, named after the URL, its default branch read with ls-remote", async () => {
    first = commit("first");
    const res = await t.call("POST", "/v1/integrations", {
      token: owner,
      body: { provider: "git", name: "Local app", url: `file://${remote}`, webhook_secret: GIT_SECRET },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ integration: { provider: "git", api_url: `file://${remote}` }, repositories_synced: 1, sync_error: null });
    integrationId = res.body.integration.id;
    const repos = (await t.call("GET", "/v1/integration-repositories?limit=200", { token: owner })).body.repositories.filter(
      (r: { integration_id: string }) => r.integration_id === integrationId,
    );
    expect(repos).toEqual([
      expect.objectContaining({
        provider: "git",
        external_id: integrationId,
        default_branch: "main",
        clone_url: `file://${remote}`,
        full_name: expect.stringContaining("roost-remote-"),
      }),
    ]);
    project = await projectBuildingEverything(t, owner, repos[0].id);
  });

  test("connecting records the heads: no poll builds the head a manual build already built; a later commit builds once; no change builds nothing", async () => {
    const manual = await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: project.pipeline } });
    expect(manual.status).toBe(201);
    expect(manual.body.build).toMatchObject({ build_number: 1, commit_sha: first, trigger_type: "manual" });
    const second = commit("second");
    expect(await pollGitRemotes(t.ctx)).toBe(0); // not due before the interval
    t.clock.advance(30);
    expect(await pollGitRemotes(t.ctx)).toBe(1);
    t.clock.advance(30);
    expect(await pollGitRemotes(t.ctx)).toBe(1);
    const builds = (await t.call("GET", `/v1/projects/${project.id}/builds?limit=200`, { token: owner })).body.builds;
    expect(builds.map((b: { build_number: number; trigger_type: string; commit_sha: string }) => [b.build_number, b.trigger_type, b.commit_sha])).toEqual([
      [2, "webhook", second],
      [1, "manual", first],
    ]);
    expect((await deliveriesOf(project.id)).filter((d) => d.host === "git").map((d) => d.result)).toEqual(["built"]);
  });

  test("a poll whose build cannot be recorded keeps the ref's previous head, and the next poll builds it once the cause is fixed", async () => {
    const next = (await buildsOf(t, owner, project.id)).length + 1;
    await t.db.execute({ sql: "UPDATE projects SET next_build_number = 1 WHERE id = ?", args: [project.id] });
    const sha = commit("while the counter is behind");
    t.clock.advance(30);
    expect(await pollGitRemotes(t.ctx)).toBe(1);
    expect((await buildsOf(t, owner, project.id)).filter((b) => b.commit_sha === sha)).toEqual([]);
    expect((await deliveriesOf(project.id)).filter((d) => d.host === "git").map((d) => d.result)).toEqual(["failed", "built"]);
    await t.db.execute({ sql: "UPDATE projects SET next_build_number = ? WHERE id = ?", args: [next, project.id] });
    t.clock.advance(30);
    expect(await pollGitRemotes(t.ctx)).toBe(1);
    expect((await buildsOf(t, owner, project.id)).filter((b) => b.commit_sha === sha)).toHaveLength(1);
  });

  test("a new tag and a new branch each build once", async () => {
    git("tag", "v1.0");
    git("branch", "feature/x");
    t.clock.advance(30);
    await pollGitRemotes(t.ctx);
    const builds = await buildsOf(t, owner, project.id);
    expect(builds.filter((b) => b.trigger_event === "tag").map((b) => b.branch)).toEqual(["v1.0"]);
    expect(builds.filter((b) => b.branch === "feature/x")).toHaveLength(1);
  });

  test("a polled branch name over 255 characters builds nothing: the delivery log says why, with the names cut, once", async () => {
    // Two path components, each within a file name's 255 bytes, as the remote (a real repository, this test's stand-in host) keeps them.
    const long = `feature/${"a".repeat(140)}/${"b".repeat(151)}`;
    expect(long.length).toBe(300);
    const sha = commit("on a long branch");
    git("branch", long);
    git("reset", "-q", "--hard", "HEAD~1");
    const logged = async () => (await deliveriesOf(project.id)).filter((d) => d.host === "git");
    const before = (await logged()).length;
    t.clock.advance(30);
    expect(await pollGitRemotes(t.ctx)).toBe(1);
    expect((await buildsOf(t, owner, project.id)).filter((b) => b.commit_sha === sha)).toEqual([]);
    const [refused, ...rest] = (await logged()) as unknown as {
      result: string;
      reason: string;
      delivery_id: string;
      commit_sha: string;
      decisions: unknown[];
    }[];
    expect(rest).toHaveLength(before);
    expect(refused).toMatchObject({ result: "ignored", reason: "the branch name is 300 characters, over 255: not built", commit_sha: sha, decisions: [] });
    expect(refused!.delivery_id).toBe(`poll:refs/heads/${long}@${sha.slice(0, 12)}`);
    // The poll recorded the ref where it is: the next one logs nothing more.
    t.clock.advance(30);
    expect(await pollGitRemotes(t.ctx)).toBe(1);
    expect(await logged()).toHaveLength(before + 1);
    git("branch", "-D", long);
  });

  test("two pollers on two connections at once: one polls the repository, the other skips it", async () => {
    const third = commit("third");
    t.clock.advance(30);
    const other = await openDatabase(t.config.databaseUrl);
    try {
      const counts = await Promise.all([pollGitRemotes(t.ctx, "process-a"), pollGitRemotes({ ...t.ctx, db: other }, "process-b")]);
      expect(counts.sort()).toEqual([0, 1]);
    } finally {
      other.close();
    }
    expect((await buildsOf(t, owner, project.id)).filter((b) => b.commit_sha === third)).toHaveLength(1);
    expect(await gitDuplicates()).toEqual([]);
  });

  test("a failing remote backs off exponentially and raises an incident after three failures", async () => {
    const moved = `${remote}-moved`;
    Bun.spawnSync(["mv", remote, moved]);
    try {
      const delays: number[] = [];
      for (let i = 0; i < 3; i++) {
        t.clock.advance(3600);
        expect(await pollGitRemotes(t.ctx)).toBe(1);
        const row = (await t.db.execute("SELECT next_poll_at, failures, last_error FROM git_polls")).rows[0]!;
        delays.push(Number(row.next_poll_at) - t.clock.now());
        expect(String(row.last_error)).toStartWith("git ls-remote failed:");
      }
      expect(delays).toEqual([60, 120, 240]);
      const incidents = (await t.call("GET", "/v1/operator-incidents", { token: owner })).body.incidents;
      expect(incidents.find((i: { reason: string }) => i.reason === "git_poll_failed")).toMatchObject({ status: "open", resource_kind: "repository" });
    } finally {
      Bun.spawnSync(["mv", moved, remote]);
    }
    t.clock.advance(3600);
    expect(await pollGitRemotes(t.ctx)).toBe(1);
    const incidents = (await t.call("GET", "/v1/operator-incidents", { token: owner })).body.incidents;
    expect(incidents.find((i: { reason: string }) => i.reason === "git_poll_failed")).toMatchObject({ status: "resolved" });
  });

  test("the generic push webhook builds with a good signature and refuses a bad or missing one", async () => {
    const sha = commit("pushed");
    const good = await push({ project_id: project.id, ref: "refs/heads/main", before: "", after: sha, message: "pushed", actor: "dev" });
    expect(good.status).toBe(200);
    expect(good.body).toMatchObject({ ok: true, duplicate: false, builds: [{ pipeline_id: project.pipeline }] });
    expect((await buildsOf(t, owner, project.id)).filter((b) => b.commit_sha === sha)).toHaveLength(1);

    const body = { project_id: project.id, ref: "refs/heads/main", after: sha };
    const bad = await push(body, `sha256=${hex("some-other-secret-entirely", JSON.stringify(body))}`);
    expect(bad.status).toBe(401);
    expect(bad.body).toEqual({
      code: "webhook_signature_invalid",
      message: "X-Roost-Signature-256 does not match the webhook secret of the project the body names.",
    });
    const missing = await push(body, null);
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({
      code: "webhook_signature_missing",
      message: "Deliveries must carry X-Roost-Signature-256: sha256=<hex HMAC-SHA256 of the body with the webhook secret>.",
    });
    const unknown = await push({ ...body, project_id: "no-such-project" });
    expect(unknown.body.code).toBe("webhook_signature_invalid");

    const replay = await push({ project_id: project.id, ref: "refs/heads/main", before: "", after: sha, message: "pushed", actor: "dev" });
    expect([replay.status, replay.body.duplicate, replay.body.builds]).toEqual([200, true, []]);
    // The next poll sees main at the commit the webhook already built: a duplicate, no second build.
    t.clock.advance(3600);
    expect(await pollGitRemotes(t.ctx)).toBe(1);
    expect((await buildsOf(t, owner, project.id)).filter((b) => b.commit_sha === sha)).toHaveLength(1);
    expect((await gitDuplicates()).map((d) => d.event)).toEqual(["push", "push"]); // the replayed body, then the poll
    const invalid = await push({ project_id: project.id, ref: "main", after: "abc" });
    expect(invalid.status).toBe(400);
    expect(invalid.body).toMatchObject({ code: "invalid_payload", details: [{ path: "body.ref" }, { path: "body.after" }] });
  });

  test("https credentials are sealed at rest and handed to runners only as clone credentials", async () => {
    const res = await t.call("POST", "/v1/integrations", {
      token: owner,
      body: { provider: "git", name: "https", url: "https://127.0.0.1:9/team/app.git", username: "ci", password: "s3cret-password" },
    });
    expect(res.status).toBe(201);
    expect(res.text).not.toContain("s3cret-password");
    const row = (await t.db.execute({ sql: "SELECT credentials_sealed FROM integrations WHERE id = ?", args: [res.body.integration.id] })).rows[0]!;
    expect(String(row.credentials_sealed)).not.toContain("s3cret-password");
    expect(res.body.sync_error).toStartWith("git ls-remote failed:");
    // The catalogue entry exists only after a sync; insert it as a sync would to ask what a runner gets.
    const integration = (await findIntegration(t.db, res.body.integration.id))!;
    await upsertRepositories(
      t.db,
      integration,
      [
        {
          external_id: integration.id,
          full_name: "team/app",
          default_branch: "main",
          is_private: true,
          avatar_url: "",
          clone_url: "https://127.0.0.1:9/team/app.git",
        },
      ],
      t.clock.now(),
    );
    const repo = (await findRepositoriesByExternalId(t.db, "git", integration.id))[0]!;
    expect(await cloneCredentials(t.ctx, repo)).toEqual({ username: "ci", password: "s3cret-password" });
  });
});
