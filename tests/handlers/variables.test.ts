// Project and pipeline variables and secrets (docs/secrets.md): write-only secrets encrypted at
// rest, maintainers only, every change recorded without its value, and what a runner's claim
// carries: secrets for trusted builds, none for a pull request from a fork (nor its re-run), and
// protected_refs honoured.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bootstrapOwner, createTestApp, userWithRole, type TestApp } from "../helpers/app.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, WEBHOOK_SECRET, createGithubIntegration, createPipeline, createProject, seedStandIn } from "../helpers/ci.ts";
import { runnerClient } from "../helpers/publishing.ts";
import { createBuild } from "../../lib/builds/create.ts";
import { sign } from "@octokit/webhooks-methods";

const SECRET = "s3cr3t-Keystore-Pa55";
const FILE_BYTES = Buffer.from([0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8]);

let t: TestApp;
let host: HostApiStandIn;
let owner: string;
let ownerEmail = "owner@example.test";
let projectId: string;

beforeAll(async () => {
  t = await createTestApp();
  host = await startHostApiStandIn();
  seedStandIn(host);
  owner = await bootstrapOwner(t, ownerEmail);
  await createGithubIntegration(t, owner, host);
  projectId = (await createProject(t, owner)).id;
});
afterAll(async () => {
  t.close();
  await host.stop();
});

const runner = () => runnerClient(t, owner);

async function drainQueue() {
  // Each test claims its own build: what earlier ones left queued or running (a pipeline runs one build at a time) is canceled.
  for (const status of ["queued", "running"]) {
    const builds = (await t.call("GET", `/v1/projects/${projectId}/builds?status=${status}&limit=200`, { token: owner })).body.builds;
    for (const b of builds) await t.call("POST", `/v1/builds/${b.id}/cancel`, { token: owner });
  }
}

describe("the API", () => {
  test("a secret is write-only: the answers and listings name it and never show the value, and the database holds it sealed", async () => {
    const put = await t.call("PUT", `/v1/projects/${projectId}/variables/KEYSTORE_PASSWORD`, { token: owner, body: { value: SECRET, secret: true } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      created: true,
      variable: { key: "KEYSTORE_PASSWORD", value: null, secret: true, file: false, pipeline_id: null, protected_refs: [] },
    });
    const plain = await t.call("PUT", `/v1/projects/${projectId}/variables/APP_FLAVOR`, { token: owner, body: { value: "production" } });
    expect(plain.body.variable).toMatchObject({ key: "APP_FLAVOR", value: "production", secret: false });
    const listed = await t.call("GET", `/v1/projects/${projectId}/variables`, { token: owner });
    expect(listed.body.variables.map((v: any) => [v.key, v.value])).toEqual([
      ["APP_FLAVOR", "production"],
      ["KEYSTORE_PASSWORD", null],
    ]);
    for (const text of [put.text, listed.text, (await t.call("GET", `/v1/openapi.json`)).text]) expect(text).not.toContain(SECRET);
    const stored = await t.db.execute({ sql: "SELECT value FROM variables WHERE key = 'KEYSTORE_PASSWORD'", args: [] });
    expect(String(stored.rows[0]!.value)).toStartWith("v1.");
    expect(String(stored.rows[0]!.value)).not.toContain(SECRET);
  });

  test("only maintainers see or change variables", async () => {
    const dev = await userWithRole(t, owner, "developer");
    await t.call("PUT", `/v1/projects/${projectId}/members/${dev.id}`, { token: owner, body: { role: "developer" } });
    const list = await t.call("GET", `/v1/projects/${projectId}/variables`, { token: dev.token });
    expect(list.status).toBe(403);
    expect(list.body).toEqual({ code: "forbidden", message: "This needs the maintainer role on the project; yours is developer." });
    expect((await t.call("PUT", `/v1/projects/${projectId}/variables/X`, { token: dev.token, body: { value: "1" } })).status).toBe(403);
  });

  test("a file variable must be base64; an unknown key answers 404; ROOST_ names are refused", async () => {
    const bad = await t.call("PUT", `/v1/projects/${projectId}/variables/ANDROID_KEYSTORE`, {
      token: owner,
      body: { value: "not base64!", secret: true, file: true },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: "invalid_request", details: [{ path: "body.value", message: "a file variable's value must be base64" }] });
    const gone = await t.call("DELETE", `/v1/projects/${projectId}/variables/NOPE`, { token: owner });
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ code: "not_found", message: "No project variable NOPE." });
    const roost = await t.call("PUT", `/v1/projects/${projectId}/variables/ROOST_X`, { token: owner, body: { value: "1" } });
    expect(roost.status).toBe(400);
    expect(roost.body.code).toBe("invalid_request");
  });

  test("every change is recorded with who and when, never the value", async () => {
    const pipeline = await createPipeline(t, owner, projectId);
    t.clock.advance(10);
    await t.call("PUT", `/v1/pipelines/${pipeline.id}/variables/DEPLOY_TOKEN`, { token: owner, body: { value: "first-token-value", secret: true } });
    t.clock.advance(10);
    await t.call("PUT", `/v1/pipelines/${pipeline.id}/variables/DEPLOY_TOKEN`, { token: owner, body: { value: "second-token-value", secret: true } });
    t.clock.advance(10);
    expect((await t.call("DELETE", `/v1/pipelines/${pipeline.id}/variables/DEPLOY_TOKEN`, { token: owner })).body).toEqual({ deleted: true });
    const changes = await t.call("GET", `/v1/projects/${projectId}/variable-changes?pipeline_id=${pipeline.id}`, { token: owner });
    expect(changes.status).toBe(200);
    expect(changes.body.changes.map((c: any) => [c.key, c.action, c.secret, c.actor, c.pipeline_id, c.created_at])).toEqual([
      ["DEPLOY_TOKEN", "deleted", true, ownerEmail, pipeline.id, t.clock.now()],
      ["DEPLOY_TOKEN", "updated", true, ownerEmail, pipeline.id, t.clock.now() - 10],
      ["DEPLOY_TOKEN", "created", true, ownerEmail, pipeline.id, t.clock.now() - 20],
    ]);
    expect(changes.text).not.toContain("token-value");
    const all = await t.call("GET", `/v1/projects/${projectId}/variable-changes`, { token: owner });
    expect(all.body.changes.map((c: any) => c.key)).toContain("KEYSTORE_PASSWORD");
  });
});

describe("what a build receives", () => {
  let pipelineId = "";
  beforeAll(async () => {
    const pipeline = await createPipeline(t, owner, projectId, {
      execution_config: {
        env: [
          { key: "PIPELINE_ENV_SECRET", value: "pipeline-env-secret-value", secret: true },
          { key: "MODE", value: "ci" },
        ],
      },
    });
    pipelineId = pipeline.id;
    await t.call("PUT", `/v1/projects/${projectId}/variables/ANDROID_KEYSTORE`, {
      token: owner,
      body: { value: FILE_BYTES.toString("base64"), secret: true, file: true },
    });
    await t.call("PUT", `/v1/pipelines/${pipelineId}/variables/APP_FLAVOR`, { token: owner, body: { value: "staging" } });
    await t.call("PUT", `/v1/projects/${projectId}/variables/RELEASE_ONLY`, {
      token: owner,
      body: { value: "release-only-secret", secret: true, protected_refs: ["release/*", "refs/tags/v*"] },
    });
  });

  const envOf = (job: any) => Object.fromEntries(job.config.execution_config.env.map((e: any) => [e.key, e.value]));
  /** A build of the pipeline on SHA_A as a webhook delivery queues it. */
  const webhookBuild = (branch: string, triggerEvent: string, triggerRef: string, context?: { pull_request: number | null; fork: boolean }) =>
    createBuild(t.ctx, { pipelineId, branch, commitSha: SHA_A, triggerType: "webhook", triggerEvent, triggerRef, ...(context ? { context } : {}) });

  test("a trusted build gets every secret, decrypted, and file variables; the pipeline's variable replaces the project's", async () => {
    await drainQueue();
    await webhookBuild("main", "push", "refs/heads/main", { pull_request: null, fork: false });
    const job = (await (await runner()).claim()).body.job;
    expect(envOf(job)).toEqual({ MODE: "ci", PIPELINE_ENV_SECRET: "pipeline-env-secret-value", KEYSTORE_PASSWORD: SECRET, APP_FLAVOR: "staging" });
    expect(job.files).toEqual([{ key: "ANDROID_KEYSTORE", content_base64: FILE_BYTES.toString("base64"), secret: true }]);
    expect(job.withheld_secrets).toEqual(["RELEASE_ONLY"]);
    expect(job.withheld_reason).toBe("their protected_refs do not match this build's ref");
  });

  test("a build of a protected ref gets the protected secret; a pull request into it does not", async () => {
    await drainQueue();
    await webhookBuild("release/1.0", "push", "refs/heads/release/1.0");
    expect(envOf((await (await runner()).claim()).body.job).RELEASE_ONLY).toBe("release-only-secret");
    await drainQueue();
    await webhookBuild("release/1.0", "pull_request", "refs/pull/3/head", { pull_request: 3, fork: false });
    const pr = (await (await runner()).claim()).body.job;
    expect(envOf(pr).RELEASE_ONLY).toBeUndefined();
    expect(envOf(pr).KEYSTORE_PASSWORD).toBe(SECRET);
  });

  test("a manual build of a protected branch gets the protected secret at the branch's head, not at a commit named by hand", async () => {
    // Otherwise a developer could push any commit to a feature branch and build it under the name release/1.0.
    await drainQueue();
    const atHead = await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, branch: "release/1.0" } });
    expect(atHead.status).toBe(201);
    expect(envOf((await (await runner()).claim()).body.job).RELEASE_ONLY).toBe("release-only-secret");
    await drainQueue();
    const pinned = await t.call("POST", `/v1/projects/${projectId}/builds`, {
      token: owner,
      body: { pipeline_id: pipelineId, branch: "release/1.0", commit_sha: SHA_A },
    });
    expect(pinned.status).toBe(201);
    const job = (await (await runner()).claim()).body.job;
    expect(job.build.id).toBe(pinned.body.build.id);
    expect(envOf(job).RELEASE_ONLY).toBeUndefined();
    expect(envOf(job).KEYSTORE_PASSWORD).toBe(SECRET);
    expect(job.withheld_secrets).toEqual(["RELEASE_ONLY"]);
    expect(job.withheld_reason).toBe("their protected_refs are not given to a build whose commit was named by hand");
  });

  test("a tag pushed with a protected branch's name does not get that branch's secret; a tag named by refs/tags/ does", async () => {
    // Anyone who may push a tag could otherwise name it master and build it with master's secrets.
    await t.call("PUT", `/v1/projects/${projectId}/variables/MASTER_ONLY`, {
      token: owner,
      body: { value: "master-only-secret", secret: true, protected_refs: ["master"] },
    });
    const tags = await createPipeline(t, owner, projectId, { trigger_config: { events: ["tag"] } });
    const pushTag = async (name: string) => {
      const body = JSON.stringify({
        ref: `refs/tags/${name}`,
        before: "0".repeat(40),
        after: SHA_A,
        repository: { id: 1001, full_name: "acme/app" },
        installation: { id: Number(host.github.installationId) },
        sender: { login: "dev" },
        head_commit: { id: SHA_A, message: "tag" },
      });
      const headers = {
        "x-github-event": "push",
        "x-github-delivery": crypto.randomUUID(),
        "x-hub-signature-256": await sign(WEBHOOK_SECRET, body),
      };
      const res = await t.call("POST", "/v1/webhooks/github", { raw: body, contentType: "application/json", headers });
      expect(res.body.builds.map((b: { pipeline_id: string }) => b.pipeline_id)).toEqual([tags.id]);
      return res.body.builds[0].id as string;
    };

    await drainQueue();
    const masterTag = await pushTag("master");
    const job = (await (await runner()).claim()).body.job;
    expect(job.build).toMatchObject({ id: masterTag, branch: "master", trigger_event: "tag", trigger_ref: "refs/tags/master" });
    expect(envOf(job).MASTER_ONLY).toBeUndefined();
    expect(envOf(job).RELEASE_ONLY).toBeUndefined();
    expect(job.withheld_secrets).toEqual(["MASTER_ONLY", "RELEASE_ONLY"]);
    expect(job.withheld_reason).toBe("their protected_refs do not match this build's ref");

    await drainQueue();
    const release = await pushTag("v1.2.0");
    const released = (await (await runner()).claim()).body.job;
    expect(released.build.id).toBe(release);
    expect(envOf(released).RELEASE_ONLY).toBe("release-only-secret");
    expect(envOf(released).MASTER_ONLY).toBeUndefined();

    // The branch master still gets it, and a branch named like a protected tag does not.
    await drainQueue();
    await createBuild(t.ctx, { pipelineId, branch: "master", commitSha: SHA_A, triggerType: "webhook", triggerEvent: "push", triggerRef: "refs/heads/master" });
    expect(envOf((await (await runner()).claim()).body.job).MASTER_ONLY).toBe("master-only-secret");
    await drainQueue();
    await createBuild(t.ctx, { pipelineId, branch: "v1.2.0", commitSha: SHA_A, triggerType: "webhook", triggerEvent: "push", triggerRef: "refs/heads/v1.2.0" });
    expect(envOf((await (await runner()).claim()).body.job).RELEASE_ONLY).toBeUndefined();
    await t.call("DELETE", `/v1/projects/${projectId}/variables/MASTER_ONLY`, { token: owner });
  });

  test("a protected_refs pattern that names nothing is refused with 400", async () => {
    const res = await t.call("PUT", `/v1/projects/${projectId}/variables/X`, { token: owner, body: { value: "1", protected_refs: ["main", "refs/pull/*"] } });
    const message = "a full ref name starts with refs/heads/ (branches) or refs/tags/ (tags); a plain pattern names branches";
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      code: "invalid_request",
      message: `The body is not valid: body.protected_refs.1: ${message}`,
      details: [{ path: "body.protected_refs.1", message }],
    });
  });

  test("a pull request from a fork, and its re-run, get no secret at all: plain variables only, and the claim says which were withheld", async () => {
    await drainQueue();
    const { build } = await webhookBuild("main", "pull_request", "refs/pull/7/head", { pull_request: 7, fork: true });
    const claimed = await (await runner()).claim();
    const job = claimed.body.job;
    expect(job.build.id).toBe(build.id);
    expect(envOf(job)).toEqual({ MODE: "ci", APP_FLAVOR: "staging" });
    expect(job.files).toEqual([]);
    expect(job.withheld_secrets).toEqual(["ANDROID_KEYSTORE", "KEYSTORE_PASSWORD", "PIPELINE_ENV_SECRET", "RELEASE_ONLY"]);
    expect(job.withheld_reason).toBe("this build is of a pull request from a fork");
    for (const value of [SECRET, "pipeline-env-secret-value", "release-only-secret", FILE_BYTES.toString("base64")]) expect(claimed.text).not.toContain(value);

    await t.call("POST", `/v1/builds/${build.id}/cancel`, { token: owner });
    const rerun = await t.call("POST", `/v1/builds/${build.id}/rerun`, { token: owner });
    expect(rerun.status).toBe(201);
    const again = await (await runner()).claim();
    expect(again.body.job.build.id).toBe(rerun.body.build.id);
    expect(again.text).not.toContain(SECRET);
    expect(again.body.job.withheld_reason).toBe("this build is of a pull request from a fork");
  });
});
