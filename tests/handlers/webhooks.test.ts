// GitHub and GitLab webhook receivers over HTTP (docs/webhooks.md): every published fixture replayed
// with correct and incorrect credentials, dedupe, concurrency, per-repository GitLab tokens,
// limits, and the delivery log.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { bootstrapOwner, createTestApp, userWithRole, type Called, type TestApp } from "../helpers/app.ts";
import { buildsOf, deliveryOf, theOneBuild } from "../helpers/deliveries.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { createGithubIntegration, repositoryId } from "../helpers/ci.ts";
import { CONTENT_KEY_WINDOW_SECONDS } from "../../lib/webhooks/dedupe-keys.ts";

const FIXTURES = resolve(import.meta.dir, "../fixtures/webhooks");
const fixture = (host: string, file: string) => readFileSync(join(FIXTURES, host, file), "utf8");
const SECRET = "github-app-webhook-secret-for-tests";
const ALREADY_LINKED = "Another project already builds this repository; a repository is built by exactly one project. Ask its maintainers to add you.";

let t: TestApp;
let host: HostApiStandIn;
let owner: string;
const projects = new Map<string, { id: string; pipeline: string }>();
const gitlabTokens = new Map<string, string>();

async function project(fullName: string, provider: "github" | "gitlab", pipelineBody: Record<string, unknown> = {}) {
  const repos = (await t.call("GET", `/v1/integration-repositories?q=${encodeURIComponent(fullName)}&limit=200`, { token: owner })).body.repositories.filter(
    (r: { full_name: string; provider: string }) => r.full_name === fullName && r.provider === provider,
  );
  const created = [];
  for (const repo of repos) {
    const p = (await t.call("POST", "/v1/projects", { token: owner, body: { repository_id: repo.id } })).body.project;
    const pipeline = (
      await t.call("POST", `/v1/projects/${p.id}/pipelines`, {
        token: owner,
        body: { name: "all", trigger_config: { events: ["push", "pull_request", "tag"], branches: ["**"] }, ...pipelineBody },
      })
    ).body.pipeline;
    projects.set(`${provider}:${repo.external_id}`, { id: p.id, pipeline: pipeline.id });
    if (provider === "gitlab") gitlabTokens.set(repo.external_id, (await t.call("POST", `/v1/projects/${p.id}/webhook-token`, { token: owner })).body.token);
    created.push(p);
  }
  return created;
}

async function github(event: string, body: string, options: { delivery?: string; signature?: string | null; contentType?: string } = {}) {
  const headers: Record<string, string> = {
    "x-github-event": event,
    "x-github-delivery": options.delivery ?? crypto.randomUUID(),
    "user-agent": "GitHub-Hookshot/test",
  };
  const signature = options.signature === undefined ? await sign(SECRET, body) : options.signature;
  if (signature !== null) headers["x-hub-signature-256"] = signature;
  return t.call("POST", "/v1/webhooks/github", { raw: body, contentType: options.contentType ?? "application/json", headers, peer: "140.82.112.1" });
}

async function gitlab(event: string, body: string, token: string | null, options: { uuid?: string; idempotency?: string } = {}) {
  const headers: Record<string, string> = { "x-gitlab-event": event, "x-gitlab-event-uuid": options.uuid ?? crypto.randomUUID() };
  if (token !== null) headers["x-gitlab-token"] = token;
  if (options.idempotency) headers["idempotency-key"] = options.idempotency;
  return t.call("POST", "/v1/webhooks/gitlab", { raw: body, contentType: "application/json", headers, peer: "34.74.90.64" });
}

/** Sends a delivery about one of the projects (`key` as in `projects`): it is answered 200 and is no duplicate; the project's builds before and after it, and its log entry. */
async function replay(key: string, send: () => Promise<Called>) {
  const p = projects.get(key)!;
  const before = (await buildsOf(t, owner, p.id)).length;
  const res = await send();
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ ok: true, duplicate: false });
  return { before, after: await buildsOf(t, owner, p.id), delivery: await deliveryOf(t, owner, res.body.delivery_id) };
}

beforeAll(async () => {
  t = await createTestApp();
  host = await startHostApiStandIn();
  host.github.repos.push(
    { id: 186853002, full_name: "Codertocat/Hello-World", default_branch: "master", private: false },
    { id: 135493233, full_name: "Codertocat/Hello-World", default_branch: "master", private: false },
    { id: 13933572, full_name: "bradrydzewski/drone-test-go", default_branch: "master", private: false },
    { id: 186853261, full_name: "Octocoders/Hello-World", default_branch: "master", private: false },
  );
  for (const [id, name] of [
    [15, "mike/diaspora"],
    [1, "jsmith/example"],
    [32059612, "anbraten/woodpecker"],
    [72081820, "demoaccount2-commits-group/test_ci_tmp"],
    [4861503, "gitlab-org/hello-world"],
    [99, "victim/app"],
    [98, "mallory/own"],
  ] as const) {
    host.gitlab.repos.push({ id, full_name: name, default_branch: "main", private: true });
  }
  // The published App payloads come from installation 1 (their `installation.id`).
  host.github.installationId = "1";
  owner = await bootstrapOwner(t);
  const gh = await createGithubIntegration(t, owner, host, { name: "GitHub", web_url: undefined, webhook_secret: SECRET });
  expect(gh.repositories_synced).toBe(4);
  const gl = await t.call("POST", "/v1/integrations", {
    token: owner,
    body: { provider: "gitlab", name: "GitLab", api_url: host.url, access_token: host.gitlab.token },
  });
  expect(gl.body.repositories_synced).toBe(7);
  for (const name of ["Codertocat/Hello-World", "bradrydzewski/drone-test-go", "Octocoders/Hello-World"]) await project(name, "github");
  for (const name of ["mike/diaspora", "jsmith/example", "anbraten/woodpecker", "demoaccount2-commits-group/test_ci_tmp", "gitlab-org/hello-world"])
    await project(name, "gitlab");
});
afterAll(async () => {
  t.close();
  await host.stop();
});

describe("every GitHub fixture, correctly signed", () => {
  test.each([
    ["ping.json", "ping", 186853261, null, "ping: the hook is configured"],
    ["push__branch_created.json", "push", 186853002, "6113728f27ae82c7b1a177c8d03f9e96e0adf246", "branch master matches **"],
    ["push__branch_updated.json", "push", 135493233, "199eddf46df50de8d02e99bf1c5fdb4101338224", "branch master matches **"],
    ["push__branch_deleted.json", "push", 13933572, null, "refs/heads/feature-branch was deleted"],
    ["push__tag_created.json", "push", 186853002, "6113728f27ae82c7b1a177c8d03f9e96e0adf246", "tag simple-tag matches event tag"],
    ["pull_request__opened.json", "pull_request", 186853002, "ec26c3e57ca3a959ca5aad62de7213c562f8c821", "pull request #2 into master"],
    ["pull_request__synchronize.json", "pull_request", 186853002, "ec26c3e57ca3a959ca5aad62de7213c562f8c821", "pull request #2 into master"],
    ["pull_request__labeled.json", "pull_request", 186853002, null, 'pull request action "labeled" brings no new commit'],
    ["pull_request__closed.json", "pull_request", 186853002, null, 'pull request action "closed" brings no new commit'],
  ])("%s → commit %p", async (file, event, repo, sha, reason) => {
    const { before, after, delivery } = await replay(`github:${repo}`, () => github(event, fixture("github", file)));
    if (sha) {
      expect(after.length).toBe(before + 1);
      expect(after[0]).toMatchObject({ commit_sha: sha, trigger_type: "webhook", trigger_event: event === "push" && file.includes("tag") ? "tag" : event });
      expect(delivery.result).toBe("built");
      expect(delivery.decisions[0].reason).toContain(reason);
    } else {
      expect(after.length).toBe(before);
      expect(delivery).toMatchObject({ result: "ignored", reason });
    }
    expect(delivery.verified).toBe(true);
  });

  test("a pinned build carries trigger_ref, trigger_actor and the changelog", async () => {
    const build = await theOneBuild(
      t,
      owner,
      await github("push", fixture("github", "push__branch_updated.json").replace("Update README", "Update README again")),
    );
    expect(build).toMatchObject({
      branch: "master",
      trigger_ref: "refs/heads/master",
      trigger_actor: "Codertocat",
      trigger_type: "webhook",
      trigger_event: "push",
    });
    expect(build.changelog).toContain("199eddf Update README again");
  });
});

describe("every GitHub fixture, wrongly signed", () => {
  test.each([
    "ping.json",
    "push__branch_created.json",
    "push__branch_updated.json",
    "push__branch_deleted.json",
    "push__tag_created.json",
    "pull_request__opened.json",
    "pull_request__synchronize.json",
    "pull_request__labeled.json",
    "pull_request__closed.json",
  ])("%s with another secret is 401 and builds nothing", async (file) => {
    const body = fixture("github", file);
    const newestBuilt = async () => (await t.call("GET", "/v1/webhook-deliveries?result=built&limit=1", { token: owner })).body.deliveries[0]?.id;
    const before = await newestBuilt();
    const res = await github(file.startsWith("pull") ? "pull_request" : "push", body, { signature: await sign("not the secret", body) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ code: "webhook_signature_invalid", message: "X-Hub-Signature-256 does not match the webhook secret." });
    expect(await newestBuilt()).toBe(before);
  });

  test("no signature is 401 webhook_signature_missing; a signature over other bytes is refused", async () => {
    const body = fixture("github", "push__branch_updated.json");
    expect((await github("push", body, { signature: null })).body.code).toBe("webhook_signature_missing");
    const other = await github("push", body.replace("master", "main"), { signature: await sign(SECRET, body) });
    expect(other.status).toBe(401);
    expect(other.body.code).toBe("webhook_signature_invalid");
  });

  test("rejected deliveries are in the log, unverified, with the reason", async () => {
    const log = await t.call("GET", "/v1/webhook-deliveries?result=rejected&limit=200", { token: owner });
    expect(log.body.deliveries.length).toBeGreaterThanOrEqual(9);
    expect(log.body.deliveries[0]).toMatchObject({ verified: false, result: "rejected", host: "github" });
  });

  test("repeated failures for a repository raise one operator incident", async () => {
    const incidents = await t.call("GET", "/v1/operator-incidents?status=open", { token: owner });
    const mine = incidents.body.incidents.filter(
      (i: { reason: string; resource_name: string }) => i.reason === "webhook_verification_failed" && i.resource_name === "Codertocat/Hello-World",
    );
    expect(mine.length).toBeGreaterThan(0);
    // One incident per repository, however many failures: the busiest one counts its repeats.
    expect(Math.max(...mine.map((i: { occurrence_count: number }) => i.occurrence_count))).toBeGreaterThanOrEqual(2);
    expect(new Set(mine.map((i: { resource_id: string }) => i.resource_id)).size).toBe(mine.length);
  });
});

describe("GitHub delivery formats and dedupe", () => {
  test("a form-encoded delivery (signed over the form body) builds", async () => {
    const json = fixture("github", "push__branch_updated.json").replace("Update README", "form delivery");
    const body = `payload=${encodeURIComponent(json)}`;
    const res = await github("push", body, { contentType: "application/x-www-form-urlencoded" });
    expect(res.status).toBe(200);
    expect(res.body.builds).toHaveLength(1);
  });

  test("a redelivery with the same X-GitHub-Delivery is {ok: true, duplicate: true} and creates nothing", async () => {
    const body = fixture("github", "push__branch_updated.json").replace("Update README", "redelivered");
    const id = crypto.randomUUID();
    const first = await github("push", body, { delivery: id });
    expect(first.body.builds).toHaveLength(1);
    const again = await github("push", body, { delivery: id });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ ok: true, duplicate: true, builds: [] });
    const record = (await t.call("GET", `/v1/webhook-deliveries/${again.body.delivery_id}`, { token: owner })).body.delivery;
    expect(record).toMatchObject({ result: "duplicate", duplicate_of: first.body.delivery_id, reason: `duplicate of delivery ${first.body.delivery_id}` });
  });

  test("the same signed body replayed under a new delivery id is a duplicate too", async () => {
    const body = fixture("github", "push__branch_updated.json").replace("Update README", "replayed");
    expect((await github("push", body)).body.builds).toHaveLength(1);
    expect((await github("push", body)).body.duplicate).toBe(true);
  });

  test("the same signed body after the replay window (as long as bodies are kept) builds again", async () => {
    const body = fixture("github", "push__branch_updated.json").replace("Update README", "replayed later");
    const start = t.clock.now();
    try {
      expect((await github("push", body)).body.builds).toHaveLength(1);
      t.clock.advance(CONTENT_KEY_WINDOW_SECONDS - 1);
      expect((await github("push", body)).body.duplicate).toBe(true);
      t.clock.advance(1);
      const later = await github("push", body);
      expect(later.body).toMatchObject({ duplicate: false, builds: [expect.anything()] });
      // And the replay window starts again from that delivery.
      expect((await github("push", body)).body.duplicate).toBe(true);
    } finally {
      t.clock.set(start);
    }
  });

  test("20 identical deliveries at once create exactly one build", async () => {
    const p = projects.get("github:135493233")!;
    const before = (await buildsOf(t, owner, p.id)).length;
    const body = fixture("github", "push__branch_updated.json").replace("Update README", "concurrent");
    const id = crypto.randomUUID();
    const results = await Promise.all(Array.from({ length: 20 }, () => github("push", body, { delivery: id })));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(results.filter((r) => !r.body.duplicate)).toHaveLength(1);
    expect((await buildsOf(t, owner, p.id)).length).toBe(before + 1);
  });

  test("[skip ci] in the head commit message builds nothing, and says so", async () => {
    const res = await github("push", fixture("github", "push__branch_updated.json").replaceAll("Update README", "docs only [skip ci]"));
    expect(res.body.builds).toEqual([]);
    const record = (await t.call("GET", `/v1/webhook-deliveries/${res.body.delivery_id}`, { token: owner })).body.delivery;
    expect(record.reason).toBe("[skip ci] in the head commit message");
  });

  test("a body over 25 MB is 413 before it is read", async () => {
    const res = await t.call("POST", "/v1/webhooks/github", {
      raw: "x".repeat(25 * 1024 * 1024 + 1),
      contentType: "application/json",
      headers: { "x-github-event": "push", "x-hub-signature-256": "sha256=" + "0".repeat(64) },
    });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe("payload_too_large");
  });
});

describe("trigger rules per pipeline", () => {
  test("several pipelines: each decides, with its reason, and one delivery can start several builds", async () => {
    const p = projects.get("github:135493233")!;
    await t.call("POST", `/v1/projects/${p.id}/pipelines`, { token: owner, body: { name: "main only", trigger_config: { branches: ["main", "release/*"] } } });
    await t.call("POST", `/v1/projects/${p.id}/pipelines`, {
      token: owner,
      body: { name: "prs only", trigger_config: { events: ["pull_request"], branches: ["**"] } },
    });
    await t.call("POST", `/v1/projects/${p.id}/pipelines`, { token: owner, body: { name: "disabled", enabled: false, trigger_config: { branches: ["**"] } } });
    await t.call("POST", `/v1/projects/${p.id}/pipelines`, { token: owner, body: { name: "also master", trigger_config: { branches: ["master"] } } });
    const res = await github("push", fixture("github", "push__branch_updated.json").replace("Update README", "many pipelines"));
    expect(res.body.builds).toHaveLength(2);
    const record = (await t.call("GET", `/v1/webhook-deliveries/${res.body.delivery_id}`, { token: owner })).body.delivery;
    const reasons = Object.fromEntries(record.decisions.map((d: { pipeline_name: string; reason: string }) => [d.pipeline_name, d.reason]));
    expect(reasons["main only"]).toBe("branch master not in [main, release/*]");
    expect(reasons["prs only"]).toBe("event push not in [pull_request]");
    expect(reasons["disabled"]).toBe("pipeline is disabled");
    expect(reasons["also master"]).toMatch(/^branch master matches master in \[master\]: build #\d+$/);
    expect(reasons["all"]).toMatch(/^branch master matches \*\* in \[\*\*\]: build #\d+$/);
  });

  test("cancel_previous: a push cancels the older queued builds of its branch, and their commit status and notification follow in the same write", async () => {
    const p = projects.get("github:13933572")!;
    const cancels = (
      await t.call("POST", `/v1/projects/${p.id}/pipelines`, {
        token: owner,
        body: { name: "cancels", trigger_config: { branches: ["**"] }, concurrency: { cancel_previous: true, max_concurrent: 5 } },
      })
    ).body.pipeline;
    const push = (sha: string) =>
      github(
        "push",
        fixture("github", "push__branch_updated.json")
          .replace(/135493233/g, "13933572")
          .replace(/199eddf46df50de8d02e99bf1c5fdb4101338224/g, sha),
      );
    const first = (await push("1".repeat(40))).body.builds;
    const second = (await push("2".repeat(40))).body.builds;
    const ofPipeline = (builds: { id: string; pipeline_id: string; build_number: number }[], id: string) => builds.find((b) => b.pipeline_id === id)!;
    const older = (await t.call("GET", `/v1/builds/${ofPipeline(first, cancels.id).id}`, { token: owner })).body.build;
    const newer = ofPipeline(second, cancels.id);
    expect(older).toMatchObject({ status: "canceled", failure_reason: `superseded by build #${newer.build_number}` });
    // The other pipeline does not cancel: its older build is still queued.
    expect((await t.call("GET", `/v1/builds/${ofPipeline(first, p.pipeline).id}`, { token: owner })).body.build.status).toBe("queued");
    const status = await t.db.execute({ sql: "SELECT status FROM commit_status_outbox WHERE build_id = ?", args: [older.id] });
    expect(status.rows).toEqual([{ status: "canceled" }]);
    const notified = await t.db.execute({ sql: "SELECT status, previous_status FROM notification_outbox WHERE build_id = ?", args: [older.id] });
    expect(notified.rows).toEqual([{ status: "canceled", previous_status: null }]);
  });

  test("a second project on a repository is refused, and the first keeps building", async () => {
    const repo = await repositoryId(t, owner, "Octocoders/Hello-World");
    const second = await t.call("POST", "/v1/projects", { token: owner, body: { repository_id: repo, name: "second project" } });
    expect(second.status).toBe(409);
    expect(second.body).toEqual({ code: "repository_already_linked", message: ALREADY_LINKED });
    const res = await github(
      "push",
      fixture("github", "push__branch_created.json").replace("186853002", "186853261").replace("Initial commit", "still one project"),
    );
    expect(res.body.builds).toHaveLength(1);
    expect(res.body.builds[0].pipeline_id).toBe(projects.get("github:186853261")!.pipeline);
  });

  test("a repository no project builds is ignored with a reason, and still 200", async () => {
    const res = await github(
      "push",
      fixture("github", "push__branch_created.json")
        .replace(/186853002/g, "42")
        .replace("Initial commit", "unknown repo"),
    );
    expect(res.status).toBe(200);
    const record = (await t.call("GET", `/v1/webhook-deliveries/${res.body.delivery_id}`, { token: owner })).body.delivery;
    expect(record.reason).toBe("no catalogue repository has github id 42");
  });
});

describe("every GitLab fixture, with the repository's token", () => {
  test.each([
    ["push.json", "Push Hook", "15", "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", "branch master matches **"],
    ["push__branch_deleted.json", "Push Hook", "4861503", null, "refs/heads/feature was deleted"],
    ["tag_push.json", "Tag Push Hook", "1", "82b3d5ae55f7080f1e6022629cdb57bfae7cccc7", "tag v1.0.0 matches event tag"],
    [
      "merge_request__open.json",
      "Merge Request Hook",
      "1",
      null,
      "ambiguous repository identity: object_attributes.target_project_id 14 differs from project.id 1",
    ],
    ["merge_request__update_with_oldrev.json", "Merge Request Hook", "32059612", "c136499ec574e1034b24c5d306de9acda3005367", "pull request #"],
    ["merge_request__update_without_oldrev.json", "Merge Request Hook", "32059612", null, "merge request update without new commits (no oldrev)"],
    ["merge_request__update_labels.json", "Merge Request Hook", "72081820", null, "merge request update without new commits (no oldrev)"],
    ["merge_request__merge.json", "Merge Request Hook", "32059612", null, 'merge request action "merge" brings no new commit'],
  ])("%s → commit %p", async (file, event, repo, sha, reason) => {
    const { before, after, delivery } = await replay(`gitlab:${repo}`, () => gitlab(event, fixture("gitlab", file), gitlabTokens.get(repo)!));
    if (sha) {
      expect(after.length).toBe(before + 1);
      expect(after[0]?.commit_sha).toBe(sha);
      expect(delivery.decisions[0].reason).toContain(reason);
    } else {
      expect(after.length).toBe(before);
      expect(delivery.reason).toBe(reason);
    }
  });

  test.each(["push.json", "tag_push.json", "merge_request__update_with_oldrev.json", "merge_request__merge.json"])(
    "%s with a wrong token is 401 and builds nothing",
    async (file) => {
      const res = await gitlab("Push Hook", fixture("gitlab", file), "roost_whk_" + "A".repeat(58));
      expect(res.status).toBe(401);
      expect(res.body).toEqual({
        code: "webhook_token_invalid",
        message: "X-Gitlab-Token is not the current webhook token of the repository this delivery names.",
      });
      expect((await gitlab("Push Hook", fixture("gitlab", file), null)).body.code).toBe("webhook_token_missing");
    },
  );
});

describe("GitLab tokens", () => {
  test("the token of another project is refused, even from the same GitLab", async () => {
    const res = await gitlab("Push Hook", fixture("gitlab", "push.json").replace("gitlab token", ""), gitlabTokens.get("32059612")!);
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("webhook_token_invalid");
  });

  test("rotation: the new token works at once, the old one is refused at once", async () => {
    const p = projects.get("gitlab:15")!;
    const old = gitlabTokens.get("15")!;
    const rotated = await t.call("POST", `/v1/projects/${p.id}/webhook-token`, { token: owner });
    expect(rotated.status).toBe(201);
    // (Read the token before toMatchObject, which replaces matched values with the matchers.)
    const newToken: string = rotated.body.token;
    expect({ ...rotated.body }).toMatchObject({
      token: expect.stringMatching(/^roost_whk_/),
      webhook_url: "http://127.0.0.1:8080/v1/webhooks/gitlab",
      repository_full_name: "mike/diaspora",
    });
    const body = fixture("gitlab", "push.json").replace("Update Catalan translation", "after rotation");
    expect((await gitlab("Push Hook", body, old)).status).toBe(401);
    const fresh = await gitlab("Push Hook", body, newToken);
    expect(fresh.status).toBe(200);
    expect(fresh.body.builds).toHaveLength(1);
    gitlabTokens.set("15", newToken);
  });

  test("dedupe by X-Gitlab-Event-UUID and by Idempotency-Key", async () => {
    const token = gitlabTokens.get("15")!;
    const body = fixture("gitlab", "push.json").replace("Update Catalan translation", "dedupe me");
    const uuid = crypto.randomUUID();
    const first = await gitlab("Push Hook", body, token, { uuid, idempotency: "resend-key-1" });
    expect(first.body.duplicate).toBe(false);
    expect((await gitlab("Push Hook", body, token, { uuid })).body.duplicate).toBe(true);
    // A manual "Resend" has a new event UUID but keeps the Idempotency-Key.
    const resent = await gitlab("Push Hook", body.replace("dedupe me", "dedupe me (resent)"), token, { idempotency: "resend-key-1" });
    expect(resent.body.duplicate).toBe(true);
  });
});

describe("the delivery log", () => {
  test("is listed per project, newest first, paged, with the decision of each pipeline", async () => {
    const p = projects.get("github:135493233")!;
    const page = await t.call("GET", `/v1/projects/${p.id}/webhook-deliveries?limit=3`, { token: owner });
    expect(page.status).toBe(200);
    expect(page.body.deliveries).toHaveLength(3);
    expect(page.body.next_cursor).toEqual(expect.any(String));
    expect(page.body.deliveries[0]).not.toHaveProperty("body");
    const next = await t.call("GET", `/v1/projects/${p.id}/webhook-deliveries?limit=3&cursor=${page.body.next_cursor}`, { token: owner });
    expect(next.body.deliveries.length).toBeGreaterThan(0);
    for (const d of next.body.deliveries) expect(page.body.deliveries.map((e: { id: string }) => e.id)).not.toContain(d.id);
  });

  test("a delivery's body is kept for the retention period", async () => {
    const res = await github("push", fixture("github", "push__branch_updated.json").replace("Update README", "kept body"));
    const one = await t.call("GET", `/v1/webhook-deliveries/${res.body.delivery_id}`, { token: owner });
    expect(one.body.delivery.body).toContain("kept body");
    const { pruneDeliveries } = await import("../../lib/webhooks/deliveries.ts");
    await pruneDeliveries(t.db, t.clock.now() + 8 * 86400);
    const later = await t.call("GET", `/v1/webhook-deliveries/${res.body.delivery_id}`, { token: owner });
    expect(later.body.delivery.body).toBeNull();
  });
});

describe("who builds a repository (a repository is built by exactly one project)", () => {
  /** GitLab's published push payload, as if sent for another GitLab project. */
  const pushFor = (projectId: number, path: string, message: string) => {
    const payload = JSON.parse(fixture("gitlab", "push.json"));
    payload.project_id = projectId;
    payload.project.id = projectId;
    payload.project.path_with_namespace = path;
    payload.commits.at(-1).message = message;
    return JSON.stringify(payload);
  };

  test("an instance maintainer who cannot see a project cannot take over its CI: every step is refused or without effect", async () => {
    // The real project, run by alice, with its GitLab hook configured.
    const alice = await userWithRole(t, owner, "maintainer");
    const victimRepo = await repositoryId(t, owner, "victim/app");
    const real = (await t.call("POST", "/v1/projects", { token: alice.token, body: { repository_id: victimRepo, name: "real" } })).body.project;
    await t.call("POST", `/v1/projects/${real.id}/pipelines`, {
      token: alice.token,
      body: { name: "all", trigger_config: { events: ["push"], branches: ["**"] } },
    });
    const realToken: string = (await t.call("POST", `/v1/projects/${real.id}/webhook-token`, { token: alice.token })).body.token;
    const realBuilds = async () => (await t.call("GET", `/v1/projects/${real.id}/builds?limit=200`, { token: alice.token })).body.builds.length;
    expect((await gitlab("Push Hook", pushFor(99, "victim/app", "before the attack"), realToken)).body.builds).toHaveLength(1);

    // mallory: an instance maintainer who is no member of the real project.
    const mallory = await userWithRole(t, owner, "maintainer");
    const notFound = { code: "not_found", message: "No project with that id." };
    expect((await t.call("GET", `/v1/projects/${real.id}`, { token: mallory.token })).body).toEqual(notFound);

    // 1. A second project on the same repository is refused, naming nothing about the real one.
    const second = await t.call("POST", "/v1/projects", { token: mallory.token, body: { repository_id: victimRepo, name: "takeover" } });
    expect(second.status).toBe(409);
    expect(second.body).toEqual({ code: "repository_already_linked", message: ALREADY_LINKED });
    expect((await t.call("GET", "/v1/projects", { token: mallory.token })).body.total).toBe(0);

    // 2. The real project's token cannot be minted, rotated or the project deleted from outside it.
    const mint = await t.call("POST", `/v1/projects/${real.id}/webhook-token`, { token: mallory.token });
    expect(mint.status).toBe(404);
    expect(mint.body).toEqual(notFound);
    expect((await t.call("DELETE", `/v1/projects/${real.id}`, { token: mallory.token })).body).toEqual(notFound);

    // 3. A token mallory mints on a project of her own does not build the real repository.
    const own = (
      await t.call("POST", "/v1/projects", { token: mallory.token, body: { repository_id: await repositoryId(t, owner, "mallory/own"), name: "own" } })
    ).body.project;
    const minted = await t.call("POST", `/v1/projects/${own.id}/webhook-token`, { token: mallory.token });
    expect(minted.status).toBe(201);
    const malloryToken: string = minted.body.token;
    const refused = { code: "webhook_token_invalid", message: "X-Gitlab-Token is not the current webhook token of the repository this delivery names." };
    const attempt = await gitlab("Push Hook", pushFor(99, "victim/app", "with mallory's token"), malloryToken);
    expect(attempt.status).toBe(401);
    expect(attempt.body).toEqual(refused);

    // 4. Deleting her project deletes its token with it; the real token was never touched.
    expect((await t.call("DELETE", `/v1/projects/${own.id}`, { token: mallory.token })).body).toEqual({ deleted: true });
    expect((await gitlab("Push Hook", pushFor(99, "victim/app", "after the delete"), malloryToken)).body).toEqual(refused);
    expect((await gitlab("Push Hook", pushFor(98, "mallory/own", "own repository"), malloryToken)).body).toEqual(refused);

    // The real project's token keeps working, and only its deliveries built there.
    const after = await gitlab("Push Hook", pushFor(99, "victim/app", "after the attack"), realToken);
    expect(after.status).toBe(200);
    expect(after.body.builds).toHaveLength(1);
    expect(await realBuilds()).toBe(2);
    const log = (await t.call("GET", `/v1/projects/${real.id}/webhook-deliveries?limit=50`, { token: alice.token })).body.deliveries;
    expect(log.map((d: { result: string }) => d.result)).toEqual(["built", "built"]);
  });

  test("deleting a project deletes its webhook token; a new project on the repository mints its own", async () => {
    const repo = await repositoryId(t, owner, "gitlab-org/hello-world");
    const old = projects.get("gitlab:4861503")!;
    const oldToken = gitlabTokens.get("4861503")!;
    const body = pushFor(4861503, "gitlab-org/hello-world", "token of a deleted project");
    expect((await gitlab("Push Hook", body, oldToken)).status).toBe(200);
    expect((await t.call("DELETE", `/v1/projects/${old.id}`, { token: owner })).status).toBe(200);
    expect((await gitlab("Push Hook", body, oldToken)).status).toBe(401);
    const next = (await t.call("POST", "/v1/projects", { token: owner, body: { repository_id: repo } })).body.project;
    await t.call("POST", `/v1/projects/${next.id}/pipelines`, { token: owner, body: { name: "all", trigger_config: { branches: ["**"] } } });
    expect((await gitlab("Push Hook", body, oldToken)).status).toBe(401);
    const fresh: string = (await t.call("POST", `/v1/projects/${next.id}/webhook-token`, { token: owner })).body.token;
    expect((await gitlab("Push Hook", body, fresh)).body.builds).toHaveLength(1);
  });
});

describe("GitLab deliveries are deduplicated by GitLab's event identities only", () => {
  test("the same body with two event UUIDs builds twice (GitLab sends identical bytes for distinct events); the same UUID twice is a duplicate", async () => {
    // Deleting a tag and pushing it again at the same commit, or a branch pushed back to where it was, repeat the bytes.
    const token = gitlabTokens.get("1")!;
    const body = fixture("gitlab", "tag_push.json");
    const first = await gitlab("Tag Push Hook", body, token);
    const second = await gitlab("Tag Push Hook", body, token);
    expect(first.body).toMatchObject({ ok: true, duplicate: false, builds: [{ build_number: expect.any(Number) }] });
    expect(second.body).toMatchObject({ ok: true, duplicate: false, builds: [{ build_number: expect.any(Number) }] });
    expect(second.body.builds[0].id).not.toBe(first.body.builds[0].id);
    const uuid = crypto.randomUUID();
    expect((await gitlab("Tag Push Hook", body, token, { uuid })).body).toMatchObject({ duplicate: false });
    expect((await gitlab("Tag Push Hook", body, token, { uuid })).body).toMatchObject({ ok: true, duplicate: true, builds: [] });
  });
});

describe("malformed deliveries, even when correctly signed, answer 400 and are logged", () => {
  const logged = async (deliveryId: string) =>
    (await t.call("GET", "/v1/webhook-deliveries?limit=200", { token: owner })).body.deliveries.find(
      (d: { delivery_id: string }) => d.delivery_id === deliveryId,
    );
  const githubPush = (change: (p: any) => void) => {
    const payload = JSON.parse(fixture("github", "push__branch_updated.json"));
    change(payload);
    return JSON.stringify(payload);
  };
  const gitlabPush = (change: (p: any) => void) => {
    const payload = JSON.parse(fixture("gitlab", "push.json"));
    change(payload);
    return JSON.stringify(payload);
  };

  const invalid = (host: "GitHub" | "GitLab", path: string, issue: string) => ({
    code: "invalid_payload",
    message: `The delivery body is not a ${host} webhook payload: ${path}: ${issue}.`,
    details: [{ path, message: issue }],
  });

  test.each([
    ["null", "push", "null", "body", "must be an object, not null"],
    ["an array", "push", "[]", "body", "must be an object, not a list"],
    ["a number", "push", "42", "body", "must be an object, not a number"],
    ["a numeric ref", "push", githubPush((p) => (p.ref = 1)), "body.ref", "must be text, not a number"],
    ["commits: [null]", "push", githubPush((p) => (p.commits = [null])), "body.commits.0", "must be an object, not null"],
    ["head_commit a string", "push", githubPush((p) => (p.head_commit = "abc")), "body.head_commit", "must be an object, not text"],
    ["repository.id an object", "push", githubPush((p) => (p.repository.id = { id: 1 })), "body.repository.id", "must be a number or text, not an object"],
    [
      "pull_request null",
      "pull_request",
      JSON.stringify({ ...JSON.parse(fixture("github", "pull_request__opened.json")), pull_request: null }),
      "body.pull_request",
      "must be an object, not null",
    ],
  ])("GitHub, signed: %s → 400 invalid_payload, logged with the reason", async (_name, event, body, path, issue) => {
    const delivery = crypto.randomUUID();
    const res = await github(event, body, { delivery });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(invalid("GitHub", path, issue));
    expect(await logged(delivery)).toMatchObject({ host: "github", verified: true, result: "rejected", reason: `invalid payload: ${path}: ${issue}` });
  });

  test.each([
    ["null", "null", "body", "must be an object, not null"],
    ["an array", "[]", "body", "must be an object, not a list"],
    ["a numeric ref", gitlabPush((p) => (p.ref = 1)), "body.ref", "must be text, not a number"],
    ["commits: [null]", gitlabPush((p) => (p.commits = [null])), "body.commits.0", "must be an object, not null"],
    ["checkout_sha a number", gitlabPush((p) => (p.checkout_sha = 7)), "body.checkout_sha", "must be text, not a number"],
    [
      "a merge request iid as a string",
      JSON.stringify({
        ...JSON.parse(fixture("gitlab", "merge_request__open.json")),
        object_attributes: { ...JSON.parse(fixture("gitlab", "merge_request__open.json")).object_attributes, iid: "1" },
      }),
      "body.object_attributes.iid",
      "must be a number, not text",
    ],
  ])("GitLab, with the project's token: %s → 400 invalid_payload, logged with the reason", async (_name, body, path, issue) => {
    const uuid = crypto.randomUUID();
    const res = await gitlab("Push Hook", body, gitlabTokens.get("15")!, { uuid });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(invalid("GitLab", path, issue));
    expect(await logged(uuid)).toMatchObject({
      host: "gitlab",
      verified: true,
      result: "rejected",
      reason: `invalid payload: ${path}: ${issue}`,
      project_id: projects.get("gitlab:15")!.id,
    });
  });

  test("a body that is not JSON is 400 malformed_json on both hosts, logged", async () => {
    const delivery = crypto.randomUUID();
    const gh = await github("push", "{not json", { delivery });
    expect(gh.status).toBe(400);
    expect(gh.body).toEqual({ code: "malformed_json", message: "The delivery body is not JSON (or a form with a JSON payload field)." });
    expect(await logged(delivery)).toMatchObject({ verified: true, result: "rejected", reason: "the body is not JSON" });
    const uuid = crypto.randomUUID();
    const gl = await gitlab("Push Hook", "{not json", gitlabTokens.get("15")!, { uuid });
    expect(gl.status).toBe(400);
    expect(gl.body).toEqual({ code: "malformed_json", message: "The delivery body is not JSON." });
    expect(await logged(uuid)).toMatchObject({ verified: true, result: "rejected", reason: "the body is not JSON" });
  });

  test("a GitLab body that is not UTF-8 is 400 malformed_json, logged (its text with U+FFFD for the stray byte)", async () => {
    const uuid = crypto.randomUUID();
    const json = new TextEncoder().encode(gitlabPush((p) => (p.user_name = "stray \u00e9")));
    const at = json.indexOf(0xc3);
    const bytes = new Uint8Array([...json.subarray(0, at), 0xff, ...json.subarray(at + 2)]);
    const res = await t.app.fetch(
      new Request("http://127.0.0.1:8080/v1/webhooks/gitlab", {
        method: "POST",
        headers: {
          host: "127.0.0.1:8080",
          "content-type": "application/json",
          "x-gitlab-event": "Push Hook",
          "x-gitlab-event-uuid": uuid,
          "x-gitlab-token": gitlabTokens.get("15")!,
        },
        body: bytes,
      }),
      "34.74.90.64",
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ code: "malformed_json", message: "The delivery body is not JSON." });
    expect(await logged(uuid)).toMatchObject({ verified: true, result: "rejected", reason: "the body is not JSON" });
  });

  test("a malformed body with a wrong token is still 401 webhook_token_invalid", async () => {
    const res = await gitlab("Push Hook", "null", "roost_whk_" + "A".repeat(58));
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("webhook_token_invalid");
  });
});

describe("one GitHub App installed on two organisations (one webhook secret, two integrations)", () => {
  let app: TestApp;
  let admin: string;
  let orgA: HostApiStandIn;
  let orgB: HostApiStandIn;
  const projectOf = new Map<string, string>();

  const pushFrom = (installation: number, repo: { id: number; full_name: string }, message: string) => {
    const payload = JSON.parse(fixture("github", "push__branch_updated.json"));
    payload.installation = { id: installation };
    payload.repository.id = repo.id;
    payload.repository.full_name = repo.full_name;
    payload.head_commit.message = message;
    return JSON.stringify(payload);
  };
  const deliver = async (body: string) => {
    const headers = { "x-github-event": "push", "x-github-delivery": crypto.randomUUID(), "x-hub-signature-256": await sign(SECRET, body) };
    return app.call("POST", "/v1/webhooks/github", { raw: body, contentType: "application/json", headers, peer: "140.82.112.1" });
  };
  const record = async (id: string) => (await app.call("GET", `/v1/webhook-deliveries/${id}`, { token: admin })).body.delivery;

  beforeAll(async () => {
    app = await createTestApp();
    admin = await bootstrapOwner(app);
    [orgA, orgB] = [await startHostApiStandIn(), await startHostApiStandIn()];
    orgA.github.installationId = "1001";
    orgB.github.installationId = "2002";
    orgA.github.repos.push(
      { id: 5001, full_name: "org-a/app", default_branch: "master", private: true },
      { id: 5003, full_name: "org-a/shared", default_branch: "master", private: true },
    );
    orgB.github.repos.push(
      { id: 5002, full_name: "org-b/app", default_branch: "master", private: true },
      { id: 5003, full_name: "org-a/shared", default_branch: "master", private: true },
    );
    for (const [name, host] of [
      ["org A", orgA],
      ["org B", orgB],
    ] as const) {
      const res = await app.call("POST", "/v1/integrations", {
        token: admin,
        body: {
          provider: "github",
          name,
          api_url: host.url,
          app_id: host.github.appId,
          installation_id: host.github.installationId,
          private_key: host.github.privateKeyPem,
          webhook_secret: SECRET,
        },
      });
      expect(res.status).toBe(201);
    }
    for (const name of ["org-a/app", "org-b/app"]) {
      const project = (await app.call("POST", "/v1/projects", { token: admin, body: { repository_id: await repositoryId(app, admin, name) } })).body.project;
      await app.call("POST", `/v1/projects/${project.id}/pipelines`, { token: admin, body: { name: "all", trigger_config: { branches: ["**"] } } });
      projectOf.set(name, project.id);
    }
  });
  afterAll(async () => {
    app.close();
    await orgA.stop();
    await orgB.stop();
  });

  test("each organisation's pushes build in its own project, routed by installation.id", async () => {
    const fromB = await deliver(pushFrom(2002, { id: 5002, full_name: "org-b/app" }, "from org B"));
    expect(fromB.status).toBe(200);
    expect(fromB.body.builds).toHaveLength(1);
    expect(await record(fromB.body.delivery_id)).toMatchObject({ result: "built", project_id: projectOf.get("org-b/app") });
    const fromA = await deliver(pushFrom(1001, { id: 5001, full_name: "org-a/app" }, "from org A"));
    expect(fromA.body.builds).toHaveLength(1);
    expect(await record(fromA.body.delivery_id)).toMatchObject({ result: "built", project_id: projectOf.get("org-a/app") });
  });

  test("a delivery is matched only against its installation's repositories", async () => {
    const crossed = await deliver(pushFrom(1001, { id: 5002, full_name: "org-b/app" }, "org B's repository named by installation 1001"));
    expect(crossed.body.builds).toEqual([]);
    expect(await record(crossed.body.delivery_id)).toMatchObject({ result: "ignored", reason: "no catalogue repository has github id 5002" });
    const unknown = await deliver(pushFrom(3003, { id: 5001, full_name: "org-a/app" }, "an installation with no integration"));
    expect(unknown.body.builds).toEqual([]);
    expect(await record(unknown.body.delivery_id)).toMatchObject({
      result: "ignored",
      reason: "no GitHub integration with this webhook secret is for installation 3003",
    });
  });

  test("a repository both installations see is still built by exactly one project", async () => {
    const [first, second] = (await app.call("GET", "/v1/integration-repositories?q=org-a/shared", { token: admin })).body.repositories;
    expect((await app.call("POST", "/v1/projects", { token: admin, body: { repository_id: first.id } })).status).toBe(201);
    const again = await app.call("POST", "/v1/projects", { token: admin, body: { repository_id: second.id } });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ code: "repository_already_linked", message: ALREADY_LINKED });
  });
});
