// Publishing through the API (docs/publishing.md): environments and their write-only secrets,
// the deployments a successful build makes, approval and rejection, what a runner that publishes
// receives (only the named secrets of that environment, the artifacts by SHA-256), promotion of
// an earlier build, retries, lost runners, and what never publishes (pull requests, forks,
// refs an environment refuses).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { userWithRole, type TestApp } from "../helpers/app.ts";
import { SHA_A, SHA_B, createPipeline, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import { uploadArtifact } from "../helpers/publishing.ts";
import { createBuild } from "../../lib/builds/create.ts";
import { reapLostDeployments } from "../../lib/publishing/reaper.ts";

let fixture: CiFixture;
let t: TestApp;
let owner: string;
let projectId: string;
const SERVICE_ACCOUNT = JSON.stringify({
  type: "service_account",
  client_email: "ci@example.iam.gserviceaccount.com",
  private_key: "-----BEGIN PRIVATE KEY-----\nMIIfake\n-----END PRIVATE KEY-----\n",
});

beforeAll(async () => {
  fixture = await startCiFixture({ ROOST_RUNNER_LEASE_SECONDS: "30" });
  ({ t, owner, projectId } = fixture);
});
afterAll(() => fixture.stop());

const PLAY = {
  type: "google_play",
  name: "play",
  environment: "testers",
  package_name: "com.example.app",
  track: "internal",
  notes: { text: "Fixes and improvements" },
};

async function runner(os: "linux" | "macos" = "linux", xcode: string | null = null) {
  const created = await t.call("POST", "/v1/runners", { token: owner, body: { name: `r-${crypto.randomUUID().slice(0, 6)}` } });
  const { id } = created.body.runner;
  const token: string = created.body.token;
  await t.call("POST", `/v1/runners/${id}/connect`, { token, body: { capabilities: { os, arch: "x64", xcode }, version: "test" } });
  const call = (method: string, path: string, body?: unknown) => t.call(method, `/v1/runners/${id}${path}`, { token, body });
  return {
    id,
    token,
    call,
    claim: (accepts: string[] = ["build", "publish"], claimId = crypto.randomUUID()) =>
      call("POST", "/jobs/claim", { claim_id: claimId, wait_seconds: 0, accepts }),
  };
}

async function drainQueue() {
  for (const status of ["queued", "running"]) {
    const builds = (await t.call("GET", `/v1/projects/${projectId}/builds?status=${status}&limit=200`, { token: owner })).body.builds;
    for (const b of builds) await t.call("POST", `/v1/builds/${b.id}/cancel`, { token: owner });
  }
  await t.db.execute("UPDATE deployments SET status = 'failed', finished_at = 1 WHERE status IN ('approved', 'running', 'waiting_approval')");
}

/** Runs a build to success through the protocol, uploading `files` as its artifacts. */
async function succeed(
  build: { id: string },
  files: Record<string, string> = { "build/app/outputs/bundle/release/app-release.aab": "fake bundle versionCode=42" },
) {
  const r = await runner();
  const claimed = await r.claim(["build"]);
  expect(claimed.body.job.build.id).toBe(build.id);
  const jobId = claimed.body.job.job_id;
  const artifacts: Record<string, { id: string; sha256: string }> = {};
  for (const [path, content] of Object.entries(files)) {
    const { up, sha } = await uploadArtifact(t, r, jobId, path, content);
    expect(up.status).toBe(201);
    artifacts[path] = { id: up.body.artifact.id, sha256: sha };
  }
  expect((await r.call("POST", `/jobs/${jobId}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 })).status).toBe(200);
  return artifacts;
}

async function pipelineWith(publish: unknown[], extra: Record<string, unknown> = {}) {
  return createPipeline(t, owner, projectId, { execution_config: { publish, ...extra } });
}

async function manualBuild(pipelineId: string) {
  return (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId } })).body.build;
}

async function env(name: string, body: Record<string, unknown> = {}) {
  const res = await t.call("PUT", `/v1/projects/${projectId}/environments/${name}`, { token: owner, body });
  expect(res.status).toBe(200);
  return res.body.environment;
}

/** After the queue is drained: a succeeded manual build of a pipeline publishing to Play through environment `name` (set up with `rules`). */
async function succeededBuildPublishingTo(name: string, rules: Record<string, unknown> = {}) {
  await drainQueue();
  await env(name, rules);
  const build = await manualBuild((await pipelineWith([{ ...PLAY, environment: name }])).id);
  await succeed(build);
  return build;
}

async function deploymentsOf(buildId: string) {
  return (await t.call("GET", `/v1/builds/${buildId}/deployments`, { token: owner })).body.deployments;
}

async function logOf(buildId: string): Promise<string> {
  return (await t.call("GET", `/v1/builds/${buildId}/logs`, { token: owner, headers: { accept: "text/plain" } })).text;
}

describe("environments", () => {
  test("a maintainer creates one with approval and approvers; viewers read it; developers may not change it", async () => {
    const approver = await userWithRole(t, owner, "developer");
    await t.call("PUT", `/v1/projects/${projectId}/members/${approver.id}`, { token: owner, body: { role: "maintainer" } });
    const put = await t.call("PUT", `/v1/projects/${projectId}/environments/production`, {
      token: owner,
      body: { requires_approval: true, approvers: [approver.email], allowed_refs: ["main", "refs/tags/v*"] },
    });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      created: true,
      environment: {
        id: expect.any(String),
        name: "production",
        requires_approval: true,
        approvers: [{ id: approver.id, email: approver.email }],
        allowed_refs: ["main", "refs/tags/v*"],
        created_at: t.clock.now(),
        updated_at: t.clock.now(),
        created_by: expect.any(String),
      },
    });
    expect((await t.call("PUT", `/v1/projects/${projectId}/environments/production`, { token: owner, body: { requires_approval: true } })).body.created).toBe(
      false,
    );

    const viewer = await userWithRole(t, owner, "developer");
    await t.call("PUT", `/v1/projects/${projectId}/members/${viewer.id}`, { token: owner, body: { role: "viewer" } });
    const listed = await t.call("GET", `/v1/projects/${projectId}/environments`, { token: viewer.token });
    expect(listed.status).toBe(200);
    expect(listed.body.environments.find((e: any) => e.name === "production")).toMatchObject({ requires_approval: true, approvers: [], current: [] });
    const developer = await userWithRole(t, owner, "developer");
    await t.call("PUT", `/v1/projects/${projectId}/members/${developer.id}`, { token: owner, body: { role: "developer" } });
    const refused = await t.call("PUT", `/v1/projects/${projectId}/environments/production`, { token: developer.token, body: {} });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ code: "forbidden", message: "This needs the maintainer role on the project; yours is developer." });
    expect((await t.call("GET", `/v1/projects/${projectId}/environments/production/secrets`, { token: viewer.token })).status).toBe(403);
  });

  test("an approver must be a maintainer of the project; a bad name or ref pattern is refused", async () => {
    const developer = await userWithRole(t, owner, "developer");
    await t.call("PUT", `/v1/projects/${projectId}/members/${developer.id}`, { token: owner, body: { role: "developer" } });
    const res = await t.call("PUT", `/v1/projects/${projectId}/environments/staging`, {
      token: owner,
      body: { requires_approval: true, approvers: [developer.email, "nobody@example.test"] },
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      code: "invalid_request",
      message: "Every approver must be a maintainer of the project.",
      details: [
        { path: "body.approvers.0", message: `${developer.email} is not a maintainer of this project; approvers must be` },
        { path: "body.approvers.1", message: "no active user has the e-mail nobody@example.test" },
      ],
    });
    expect((await t.call("PUT", `/v1/projects/${projectId}/environments/-bad`, { token: owner, body: {} })).status).toBe(400);
    const ref = await t.call("PUT", `/v1/projects/${projectId}/environments/staging`, { token: owner, body: { allowed_refs: ["refs/pull/*"] } });
    expect(ref.status).toBe(400);
    expect(ref.body.details[0].path).toBe("body.allowed_refs.0");
    const missing = await t.call("GET", `/v1/projects/${projectId}/environments/nope`, { token: owner });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ code: "not_found", message: "No environment nope in this project." });
  });

  test("PUTs of a new environment at once: one creates it, each writes and answers its own settings", async () => {
    const bodies = Array.from({ length: 6 }, (_, i) => ({ requires_approval: i % 2 === 0, allowed_refs: [`release/${i}/*`] }));
    const answers = await Promise.all(bodies.map((body) => t.call("PUT", `/v1/projects/${projectId}/environments/at-once`, { token: owner, body })));
    expect(answers.map((a) => a.status)).toEqual(bodies.map(() => 200));
    expect(answers.filter((a) => a.body.created).length).toBe(1);
    expect(answers.map((a) => a.body.environment.allowed_refs)).toEqual(bodies.map((b) => b.allowed_refs));
    expect(answers.map((a) => a.body.environment.requires_approval)).toEqual(bodies.map((b) => b.requires_approval));
    const stored = (await t.call("GET", `/v1/projects/${projectId}/environments/at-once`, { token: owner })).body.environment;
    expect(answers.map((a) => a.body.environment.allowed_refs)).toContainEqual(stored.allowed_refs);
  });

  test("its secrets are write-only, sealed for the environment, and recorded without their values", async () => {
    await env("testers");
    const put = await t.call("PUT", `/v1/projects/${projectId}/environments/testers/secrets/GOOGLE_PLAY_SERVICE_ACCOUNT`, {
      token: owner,
      body: { value: SERVICE_ACCOUNT, secret: true },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ created: true, secret: { key: "GOOGLE_PLAY_SERVICE_ACCOUNT", value: null, secret: true, pipeline_id: null } });
    const listed = await t.call("GET", `/v1/projects/${projectId}/environments/testers/secrets`, { token: owner });
    expect(listed.body.secrets.map((s: any) => [s.key, s.value])).toEqual([["GOOGLE_PLAY_SERVICE_ACCOUNT", null]]);
    // Not a project variable: no build sees it.
    expect((await t.call("GET", `/v1/projects/${projectId}/variables`, { token: owner })).body.variables).toEqual([]);
    const stored = await t.db.execute("SELECT value FROM variables WHERE key = 'GOOGLE_PLAY_SERVICE_ACCOUNT'");
    expect(String(stored.rows[0]!.value)).not.toContain("service_account");
    const changes = (await t.call("GET", `/v1/projects/${projectId}/variable-changes`, { token: owner })).body.changes;
    expect(changes[0]).toMatchObject({ key: "GOOGLE_PLAY_SERVICE_ACCOUNT", action: "created", environment_id: expect.any(String) });
    for (const text of [put.text, listed.text]) expect(text).not.toContain("private_key");
    expect((await t.call("DELETE", `/v1/projects/${projectId}/environments/testers/secrets/NOPE`, { token: owner })).body).toEqual({
      code: "not_found",
      message: "No secret NOPE in environment testers.",
    });
  });
});

describe("a successful build publishes", () => {
  test("to an environment that needs approval: it waits, approvers decide, then a runner that publishes gets it with the named secret only", async () => {
    await drainQueue();
    const approver = await userWithRole(t, owner, "maintainer");
    await t.call("PUT", `/v1/projects/${projectId}/members/${approver.id}`, { token: owner, body: { role: "maintainer" } });
    const otherMaintainer = await userWithRole(t, owner, "maintainer");
    await t.call("PUT", `/v1/projects/${projectId}/members/${otherMaintainer.id}`, { token: owner, body: { role: "maintainer" } });
    const developer = await userWithRole(t, owner, "developer");
    await t.call("PUT", `/v1/projects/${projectId}/members/${developer.id}`, { token: owner, body: { role: "developer" } });
    await env("testers", { requires_approval: true, approvers: [approver.email] });
    await t.call("PUT", `/v1/projects/${projectId}/environments/testers/secrets/GOOGLE_PLAY_SERVICE_ACCOUNT`, {
      token: owner,
      body: { value: SERVICE_ACCOUNT, secret: true },
    });
    await t.call("PUT", `/v1/projects/${projectId}/environments/testers/secrets/UNRELATED_TOKEN`, {
      token: owner,
      body: { value: "unrelated-secret-value", secret: true },
    });
    await env("production");
    await t.call("PUT", `/v1/projects/${projectId}/environments/production/secrets/GOOGLE_PLAY_SERVICE_ACCOUNT`, {
      token: owner,
      body: { value: "production-key-value", secret: true },
    });

    const pipeline = await pipelineWith([PLAY]);
    const build = await manualBuild(pipeline.id);
    const artifacts = await succeed(build);
    const [waiting] = await deploymentsOf(build.id);
    expect(waiting).toMatchObject({
      build_id: build.id,
      build_number: build.build_number,
      environment: "testers",
      publisher: "play",
      publisher_type: "google_play",
      target: "com.example.app internal",
      trigger: "build",
      status: "waiting_approval",
      decided_by: null,
      release_notes: { "en-US": "Fixes and improvements" },
      artifacts: [
        {
          id: artifacts["build/app/outputs/bundle/release/app-release.aab"]!.id,
          path: "build/app/outputs/bundle/release/app-release.aab",
          sha256: artifacts["build/app/outputs/bundle/release/app-release.aab"]!.sha256,
          size: 26,
          role: "binary",
        },
      ],
    });
    expect(await logOf(build.id)).toContain("[roost] publish play to testers (com.example.app internal) waits for approval.");
    const publisher = await runner();
    expect((await publisher.claim()).status).toBe(204);

    // Only the environment's approvers decide: not a developer, not another maintainer.
    const byDeveloper = await t.call("POST", `/v1/deployments/${waiting.id}/approve`, { token: developer.token });
    expect(byDeveloper.status).toBe(403);
    expect(byDeveloper.body).toEqual({ code: "forbidden", message: "This needs the maintainer role on the project; yours is developer." });
    const byOther = await t.call("POST", `/v1/deployments/${waiting.id}/approve`, { token: otherMaintainer.token });
    expect(byOther.body).toEqual({ code: "forbidden", message: "Only the approvers of environment testers may approve or reject its deployments." });
    t.clock.advance(5);
    const approved = await t.call("POST", `/v1/deployments/${waiting.id}/approve`, { token: approver.token });
    expect(approved.status).toBe(200);
    expect(approved.body.deployment).toMatchObject({ status: "approved", decided_by: approver.email, decided_at: t.clock.now() });
    const again = await t.call("POST", `/v1/deployments/${waiting.id}/reject`, { token: approver.token });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      code: "deployment_not_waiting",
      message: `This deployment is approved (decided by ${approver.email}); only a deployment waiting for approval can be approved or rejected.`,
    });
    expect(await logOf(build.id)).toContain(`[roost] publish play to testers approved by ${approver.email}; it is queued for a runner.`);

    // A runner that does not say it publishes gets builds only.
    expect((await (await runner()).claim(["build"])).status).toBe(204);
    const claimed = await publisher.claim();
    expect(claimed.status).toBe(201);
    const job = claimed.body.publish;
    expect(job).toMatchObject({
      deployment_id: waiting.id,
      step: "publish:play",
      environment: "testers",
      next_line: 0,
      build: { id: build.id, tag: null },
      publisher: { type: "google_play", package_name: "com.example.app", track: "internal" },
    });
    expect(job.secrets).toEqual([{ key: "GOOGLE_PLAY_SERVICE_ACCOUNT", value: SERVICE_ACCOUNT, file: false }]);
    expect(claimed.text).not.toContain("unrelated-secret-value");
    expect(claimed.text).not.toContain("production-key-value");
    expect((await deploymentsOf(build.id))[0]).toMatchObject({ status: "running", runner_id: publisher.id });

    // The runner downloads the bytes it sends by the deployment, checks their SHA-256, logs and finishes.
    const aab = job.artifacts[0];
    const download = await publisher.call("GET", `/deployments/${waiting.id}/artifacts/${aab.id}`);
    expect(download.text).toBe("fake bundle versionCode=42");
    expect(download.headers.get("x-roost-artifact-sha256")).toBe(aab.sha256);
    const stranger = await runner();
    expect((await stranger.call("GET", `/deployments/${waiting.id}/artifacts/${aab.id}`)).body).toEqual({
      code: "job_not_assigned",
      message: "This deployment is not assigned to this runner.",
    });
    const logged = await publisher.call("POST", `/deployments/${waiting.id}/logs`, {
      first_line: 0,
      lines: [{ step: "publish:play", text: "uploaded bundle: version code 42" }],
    });
    expect(logged.status).toBe(202);
    expect((await publisher.call("POST", `/deployments/${waiting.id}/finish`, { status: "succeeded", line_count: 2 })).body.code).toBe("log_incomplete");
    t.clock.advance(3);
    const finished = await publisher.call("POST", `/deployments/${waiting.id}/finish`, {
      status: "succeeded",
      line_count: 1,
      store_answer: { summary: "version code 42 on internal (completed)", version: "42", details: { edit_id: "e1" } },
    });
    expect(finished.status).toBe(200);
    expect(finished.body.deployment).toMatchObject({
      status: "succeeded",
      finished_at: t.clock.now(),
      store_answer: { summary: "version code 42 on internal (completed)", version: "42", url: null, details: { edit_id: "e1" } },
    });
    const log = await logOf(build.id);
    expect(log).toContain("uploaded bundle: version code 42");
    expect(log).toContain("[roost] publish play to testers succeeded: version code 42 on internal (completed)");
    const current = (await t.call("GET", `/v1/projects/${projectId}/environments/testers`, { token: owner })).body.environment.current;
    expect(current).toEqual([
      {
        environment: "testers",
        target: "com.example.app internal",
        publisher: "play",
        deployment_id: waiting.id,
        build_id: build.id,
        build_number: build.build_number,
        commit_sha: SHA_A,
        version: "42",
        summary: "version code 42 on internal (completed)",
        published_at: t.clock.now(),
      },
    ]);
    // Late lines after the finish are refused: the deployment is over.
    expect((await publisher.call("POST", `/deployments/${waiting.id}/logs`, { first_line: 1, lines: [{ text: "late" }] })).body.code).toBe("job_finished");

    // Promotion: the same bytes to production, with a staged rollout; production needs no approval.
    const promoted = await t.call("POST", `/v1/builds/${build.id}/publish`, {
      token: developer.token,
      body: { publisher: "play", environment: "production", overrides: { track: "production", user_fraction: 0.1, release_status: "inProgress" } },
    });
    expect(promoted.status).toBe(201);
    expect(promoted.body.deployment).toMatchObject({
      environment: "production",
      trigger: "promotion",
      status: "approved",
      target: "com.example.app production",
      requested_by: developer.email,
      config: { track: "production", user_fraction: 0.1, release_status: "inProgress" },
      artifacts: waiting.artifacts,
    });
    const prod = (await publisher.claim()).body.publish;
    expect(prod.secrets).toEqual([{ key: "GOOGLE_PLAY_SERVICE_ACCOUNT", value: "production-key-value", file: false }]);
  });

  test("a rejected deployment never runs", async () => {
    const build = await succeededBuildPublishingTo("gated", { requires_approval: true });
    const [d] = await deploymentsOf(build.id);
    const rejected = await t.call("POST", `/v1/deployments/${d.id}/reject`, { token: owner });
    expect(rejected.body.deployment).toMatchObject({ status: "rejected", decided_by: "owner@example.test" });
    expect((await (await runner()).claim()).status).toBe(204);
    expect(await logOf(build.id)).toContain("[roost] publish play to gated rejected by owner@example.test; it will not run.");
    expect((await t.call("POST", `/v1/deployments/${d.id}/retry`, { token: owner })).body).toEqual({
      code: "deployment_not_retryable",
      message: "This deployment is rejected; only a failed deployment can be retried.",
    });
  });

  test("an environment's allowed refs, a missing environment and a missing artifact each record a failed deployment saying why", async () => {
    await drainQueue();
    await env("store", { allowed_refs: ["refs/tags/v*"] });
    const pipeline = await pipelineWith([
      { ...PLAY, name: "store", environment: "store" },
      { ...PLAY, name: "ghost", environment: "no-such-env" },
      { ...PLAY, name: "apk-only", environment: "testers", artifact: "**/*.apk" },
    ]);
    const { build } = await createBuild(t.ctx, {
      pipelineId: pipeline.id,
      branch: "main",
      commitSha: SHA_B,
      triggerType: "webhook",
      triggerEvent: "push",
      triggerRef: "refs/heads/main",
      context: { fork: false },
    });
    await succeed(build);
    const byName = Object.fromEntries((await deploymentsOf(build.id)).map((d: any) => [d.publisher, [d.status, d.failure_reason]]));
    expect(byName).toEqual({
      store: ["failed", "environment store does not take this build: branch main not in [refs/tags/v*]"],
      ghost: ["failed", "this project has no environment named no-such-env (create it with PUT /v1/projects/{project_id}/environments/no-such-env)"],
      "apk-only": ["failed", "no artifact of this build is a .aab or .apk matching **/*.apk"],
    });
    const { build: tag } = await createBuild(t.ctx, {
      pipelineId: pipeline.id,
      branch: "v1.2.0",
      commitSha: SHA_B,
      triggerType: "webhook",
      triggerEvent: "tag",
      triggerRef: "refs/tags/v1.2.0",
      context: { fork: false, tag: "v1.2.0" },
    });
    await succeed(tag);
    expect((await deploymentsOf(tag.id)).find((d: any) => d.publisher === "store").status).toBe("approved");
  });

  test("a pull request (a fork's too: its builds are pull requests) never publishes; the log says so", async () => {
    await drainQueue();
    await env("open");
    const pipeline = await pipelineWith([{ ...PLAY, environment: "open" }]);
    const { build } = await createBuild(t.ctx, {
      pipelineId: pipeline.id,
      branch: "main",
      commitSha: SHA_A,
      triggerType: "webhook",
      triggerEvent: "pull_request",
      triggerRef: "refs/pull/7/head",
      context: { pull_request: 7, fork: false },
    });
    await succeed(build);
    expect(await deploymentsOf(build.id)).toEqual([]);
    expect(await logOf(build.id)).toContain("[roost] publishers do not run for a pull request: play skipped.");
    const promote = await t.call("POST", `/v1/builds/${build.id}/publish`, { token: owner, body: { publisher: "play" } });
    expect(promote.status).toBe(409);
    expect(promote.body).toEqual({ code: "build_not_publishable", message: "Environment open never takes a pull request's build." });
  });

  test("a publisher's refs choose which builds it publishes", async () => {
    await drainQueue();
    await env("open");
    const pipeline = await pipelineWith([{ ...PLAY, environment: "open", refs: ["release/*"] }]);
    const build = await manualBuild(pipeline.id);
    await succeed(build);
    expect(await deploymentsOf(build.id)).toEqual([]);
    expect(await logOf(build.id)).toContain("[roost] publish play skipped: branch main not in [release/*].");
  });
});

describe("promotion and retries", () => {
  test("promotion names one of the build's publishers; overrides must fit its type; only a successful build", async () => {
    await drainQueue();
    await env("open");
    const pipeline = await pipelineWith([{ ...PLAY, environment: "open" }]);
    const build = await manualBuild(pipeline.id);
    const unknown = await t.call("POST", `/v1/builds/${build.id}/publish`, { token: owner, body: { publisher: "nope" } });
    expect(unknown.body).toEqual({ code: "not_found", message: `Build #${build.build_number} has no publisher nope; it has play.` });
    const early = await t.call("POST", `/v1/builds/${build.id}/publish`, { token: owner, body: { publisher: "play" } });
    expect(early.body).toEqual({ code: "build_not_publishable", message: `Build #${build.build_number} is queued; only a successful build publishes.` });
    await succeed(build);
    const wrong = await t.call("POST", `/v1/builds/${build.id}/publish`, {
      token: owner,
      body: { publisher: "play", overrides: { testers: ["a@example.test"] } },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.details).toEqual([{ path: "body.overrides.testers", message: "a google_play publisher has no testers" }]);
    const rollout = await t.call("POST", `/v1/builds/${build.id}/publish`, {
      token: owner,
      body: { publisher: "play", overrides: { user_fraction: 0.2, release_status: "completed" } },
    });
    expect(rollout.status).toBe(400);
    expect(rollout.body.details).toEqual([
      { path: "body.overrides.user_fraction", message: "a staged rollout (user_fraction) needs release_status inProgress or halted" },
    ]);
    const viewer = await userWithRole(t, owner, "developer");
    await t.call("PUT", `/v1/projects/${projectId}/members/${viewer.id}`, { token: owner, body: { role: "viewer" } });
    expect((await t.call("POST", `/v1/builds/${build.id}/publish`, { token: viewer.token, body: { publisher: "play" } })).status).toBe(403);
  });

  test("a failed deployment is retried as a new one of the same build; a lost runner fails it", async () => {
    const build = await succeededBuildPublishingTo("open");
    const publisher = await runner();
    const job = (await publisher.claim()).body.publish;
    t.clock.advance(31);
    expect(await reapLostDeployments(t.ctx)).toBe(1);
    const [lost] = await deploymentsOf(build.id);
    expect(lost).toMatchObject({ id: job.deployment_id, status: "failed" });
    expect(lost.failure_reason).toMatch(/^runner_lost: runner r-\w+ sent no heartbeat for 30 s while publishing$/);
    expect(await logOf(build.id)).toContain("Check the store before retrying it.");
    expect((await publisher.call("POST", `/deployments/${job.deployment_id}/heartbeat`)).body.status).toBe("failed");
    const retried = await t.call("POST", `/v1/deployments/${lost.id}/retry`, { token: owner });
    expect(retried.status).toBe(201);
    expect(retried.body.deployment).toMatchObject({ trigger: "retry", retry_of: lost.id, status: "approved", artifacts: lost.artifacts });
  });

  test("a runner stopping before it starts a publish hands it back", async () => {
    await succeededBuildPublishingTo("open");
    const a = await runner();
    const job = (await a.claim()).body.publish;
    expect((await a.call("POST", `/deployments/${job.deployment_id}/release`)).body).toEqual({ released: true });
    expect((await (await runner()).claim()).body.publish.deployment_id).toBe(job.deployment_id);
  });

  test("an App Store Connect publish goes only to a macOS runner with Xcode", async () => {
    await drainQueue();
    await env("open");
    const asc = {
      type: "app_store_connect",
      environment: "open",
      app_id: "1234567890",
      key_id: "ABCDE12345",
      issuer_id: "57246542-96fe-1a63-e053-0824d011072a",
      beta_groups: ["QA"],
    };
    const build = await manualBuild((await pipelineWith([asc])).id);
    await succeed(build, { "build/ios/ipa/Runner.ipa": "fake ipa" });
    expect((await (await runner()).claim()).status).toBe(204);
    const mac = await runner("macos", "16.2");
    expect((await mac.claim()).body.publish.publisher).toMatchObject({ type: "app_store_connect", beta_groups: ["QA"] });
  });
});

describe("docs/publishing.md", () => {
  test("its roost.yaml example is a valid pipeline file", async () => {
    const { parsePipelineFile } = await import("../../lib/pipelines/file.ts");
    const { fencedBlocks } = await import("../helpers/markdown.ts");
    const doc = await Bun.file(new URL("../../docs/publishing.md", import.meta.url)).text();
    const yaml = fencedBlocks(doc).filter((b) => b.info[0] === "yaml");
    expect(yaml.length).toBeGreaterThan(0);
    for (const block of yaml) {
      const parsed = parsePipelineFile(block.code);
      expect(parsed.ok ? [] : parsed.problems).toEqual([]);
    }
  });
});
