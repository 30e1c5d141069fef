// The pipeline file is read from the host once per repository and commit, and the same text is
// parsed once (lib/pipelines/file-cache.ts): deliveries for one commit at the same time share one
// read, later ones read nothing, new commits with an unchanged file are read but not parsed again,
// and a host's failure is not remembered. Counted on the host-API stand-in's requests, through
// signed GitHub pushes.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sign } from "@octokit/webhooks-methods";
import { bootstrapOwner, createTestApp, type TestApp } from "../helpers/app.ts";
import { createGithubIntegration, WEBHOOK_SECRET } from "../helpers/ci.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { pushPipelineFile } from "../helpers/pipeline-file.ts";
import { pipelineFileCacheOf } from "../../lib/pipelines/file-cache.ts";

const REPO = { id: 5151, full_name: "acme/cached" };

let t: TestApp;
let host: HostApiStandIn;
let owner: string;
let projectId: string;

beforeAll(async () => {
  host = await startHostApiStandIn();
  host.github.repos.push({ id: REPO.id, full_name: REPO.full_name, default_branch: "main", private: true });
  host.files.set(`${REPO.full_name}:roost.yaml`, pushPipelineFile(50));
  t = await createTestApp({ ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL: "true" });
  // The stand-in's tokens expire an hour from the real now: on the app's clock too, so the
  // installation token is kept and the only request a delivery makes is the file's.
  t.clock.set(Math.floor(Date.now() / 1000));
  owner = await bootstrapOwner(t);
  await createGithubIntegration(t, owner, host);
  const repos = (await t.call("GET", `/v1/integration-repositories?q=${encodeURIComponent(REPO.full_name)}`, { token: owner })).body.repositories;
  projectId = (await t.call("POST", "/v1/projects", { token: owner, body: { repository_id: repos[0].id } })).body.project.id;
});
afterAll(async () => {
  t?.close();
  await host?.stop();
});

async function push(branch: string, sha: string): Promise<{ status: number; body: any }> {
  const body = JSON.stringify({
    ref: `refs/heads/${branch}`,
    before: "0".repeat(40),
    after: sha,
    repository: REPO,
    pusher: { name: "dev" },
    head_commit: { id: sha, message: "m" },
    commits: [{ id: sha, message: "m" }],
  });
  const res = await t.call("POST", "/v1/webhooks/github", {
    raw: body,
    contentType: "application/json",
    headers: { "x-github-event": "push", "x-github-delivery": crypto.randomUUID(), "x-hub-signature-256": await sign(WEBHOOK_SECRET, body) },
  });
  return { status: res.status, body: res.body };
}
const fileReads = (sha: string) => host.requests.filter((r) => r.path === `/repos/${REPO.full_name}/contents/roost.yaml?ref=${sha}`).length;
const cache = () => pipelineFileCacheOf(t.ctx.secrets);

test("deliveries of one commit at the same time read the file once, and later ones not at all", async () => {
  const sha = "1".repeat(40);
  const answers = await Promise.all(["main", "a", "b", "c", "d"].map((branch) => push(branch, sha)));
  for (const a of answers) expect(a).toMatchObject({ status: 200, body: { duplicate: false } });
  expect(answers.every((a) => a.body.builds.length === 1)).toBe(true);
  expect(fileReads(sha)).toBe(1);
  expect((await push("e", sha)).body.builds).toHaveLength(1);
  expect(fileReads(sha)).toBe(1);
  const builds = (await t.call("GET", `/v1/projects/${projectId}/builds`, { token: owner })).body.builds;
  expect(builds).toHaveLength(6);
  for (const b of builds) expect(b.definition_source).toEqual({ source: "file", path: "roost.yaml", commit_sha: sha });
});

test("new commits are read, but a file whose text did not change is not parsed again", async () => {
  const parses = cache().parses;
  for (const sha of ["2".repeat(40), "3".repeat(40), "4".repeat(40)]) {
    expect((await push("main", sha)).body.builds).toHaveLength(1);
    expect(fileReads(sha)).toBe(1);
  }
  expect(cache().parses).toBe(parses);
  // A changed file at a new commit is parsed, once.
  host.files.set(`${REPO.full_name}:roost.yaml`, pushPipelineFile(40));
  await push("main", "5".repeat(40));
  await push("other", "5".repeat(40));
  expect(cache().parses).toBe(parses + 1);
});

test("a host that could not answer is asked again by the next delivery", async () => {
  const sha = "6".repeat(40);
  host.failNext(1);
  const before = host.requests.length;
  const failed = await push("main", sha);
  expect(failed.body.builds).toEqual([]);
  const delivery = (await t.call("GET", `/v1/webhook-deliveries/${failed.body.delivery_id}`, { token: owner })).body.delivery;
  expect(delivery.reason).toContain("answered HTTP 500");
  expect(host.requests.slice(before).map((r) => r.path)).toEqual([`/repos/${REPO.full_name}/contents/roost.yaml?ref=${sha}`]);
  // (another branch: the same body again would be a duplicate by its content)
  expect((await push("retry", sha)).body.builds).toHaveLength(1);
  expect(fileReads(sha)).toBe(2);
});
