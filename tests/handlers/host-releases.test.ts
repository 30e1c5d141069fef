// Host releases (docs/publishing.md "Host releases"): a host_release (github_release) publisher's
// deployment is made by the daemon, never handed to a runner; the release of the tag is created on
// GitHub (the host-API stand-in, tests/support/host-api-stand-in.ts) with the build's artifacts
// and notes; a retry after a broken upload and a promotion update the same release and send only
// what GitHub lacks; a GitLab project's release goes to GitLab (generic packages and release
// links). Release notes from roost.yaml's text, from the commits since the last publish
// to the environment, and from a file of the repository that the runner is asked to upload.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TestApp } from "../helpers/app.ts";
import { SHA_A, SHA_B, createGitlabIntegration, createPipeline, createProject, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import { runnerClient, uploadArtifact } from "../helpers/publishing.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { createBuild } from "../../lib/builds/create.ts";
import { publishHostReleases } from "../../lib/publishing/host-release-claim.ts";

let fixture: CiFixture;
let t: TestApp, host: HostApiStandIn, owner: string, projectId: string;
beforeAll(async () => {
  ({ t, owner, projectId, host } = fixture = await startCiFixture({ ROOST_RUNNER_LEASE_SECONDS: "30" }));
  for (const name of ["releases", "notes"]) await t.call("PUT", `/v1/projects/${projectId}/environments/${name}`, { token: owner, body: {} });
});
afterAll(() => fixture.stop());

const runner = () => runnerClient(t, owner, { os: "linux", arch: "x64", xcode: null });

/** Runs the build's job to success through the runner protocol, uploading `files`; the claimed job. */
async function succeed(build: { id: string }, files: Record<string, string>) {
  const r = await runner();
  const claimed = await r.claim({ accepts: ["build"] });
  expect(claimed.body.job.build.id).toBe(build.id);
  const jobId = claimed.body.job.job_id;
  for (const [path, content] of Object.entries(files)) {
    const { up } = await uploadArtifact(t, r, jobId, path, content);
    expect(up.status).toBe(201);
  }
  expect((await r.call("POST", `/jobs/${jobId}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 })).status).toBe(200);
  return claimed.body.job;
}

async function tagBuild(pipelineId: string, tag: string, sha: string, changelog = "") {
  const { build } = await createBuild(t.ctx, {
    pipelineId,
    branch: tag,
    commitSha: sha,
    triggerType: "webhook",
    triggerEvent: "tag",
    triggerRef: `refs/tags/${tag}`,
    context: { fork: false, tag },
    changelog,
  });
  return build;
}

const deploymentsOf = async (buildId: string) => (await t.call("GET", `/v1/builds/${buildId}/deployments`, { token: owner })).body.deployments as any[];
const logOf = async (buildId: string) => (await t.call("GET", `/v1/builds/${buildId}/logs`, { token: owner, headers: { accept: "text/plain" } })).text;
const uploads = () => host.requests.filter((r) => r.method === "POST" && r.path.startsWith("/api/uploads/"));

const FILES = { "build/app/outputs/flutter-apk/app-release.apk": "apk bytes v1.2.0", "build/app/outputs/bundle/release/app-release.aab": "bundle bytes" };

describe("a host release", () => {
  test("is made by the daemon: a GitHub release of the tag with the build's artifacts and notes, recorded on the deployment", async () => {
    const pipeline = await createPipeline(t, owner, projectId, {
      execution_config: { publish: [{ type: "github_release", name: "release", environment: "releases", notes: { text: "Faster start" }, prerelease: true }] },
    });
    const build = await tagBuild(pipeline.id, "v1.2.0", SHA_A);
    await succeed(build, FILES);
    const [queued] = await deploymentsOf(build.id);
    expect(queued).toMatchObject({ publisher: "release", publisher_type: "host_release", target: "releases", status: "approved" });
    expect(queued.artifacts.map((a: any) => [a.path, a.role])).toEqual([
      ["build/app/outputs/bundle/release/app-release.aab", "asset"],
      ["build/app/outputs/flutter-apk/app-release.apk", "asset"],
    ]);
    // No runner ever gets it: the host's credentials stay in the daemon.
    const claim = await (await runner()).claim({ accepts: ["publish"] });
    expect([claim.status, claim.text]).toEqual([204, ""]);

    expect(await publishHostReleases(t.ctx)).toBe(1);
    const releases = host.github.releases.filter((r) => r.tag_name === "v1.2.0");
    expect(releases.map((r) => ({ ...r, assets: r.assets.map((a) => [a.name, a.state, a.bytes.toString()]) }))).toEqual([
      {
        id: releases[0]!.id,
        repository: "acme/app",
        tag_name: "v1.2.0",
        target_commitish: SHA_A,
        name: "v1.2.0",
        body: "Faster start",
        draft: false,
        prerelease: true,
        assets: [
          ["app-release.aab", "uploaded", "bundle bytes"],
          ["app-release.apk", "uploaded", "apk bytes v1.2.0"],
        ],
      },
    ]);
    const [done] = await deploymentsOf(build.id);
    expect(done).toMatchObject({
      status: "succeeded",
      runner_id: null,
      store_answer: {
        summary: "release v1.2.0 of acme/app created: 2 assets uploaded, 0 already there",
        version: "v1.2.0",
        url: "https://github.example.test/acme/app/releases/tag/v1.2.0",
        details: { release_id: String(releases[0]!.id), created: true, uploaded: ["app-release.aab", "app-release.apk"], kept: [] },
      },
    });
    const log = await logOf(build.id);
    expect(log).toContain("[roost] publish release to releases (releases) is queued (Roost makes host releases itself).");
    expect(log).toContain("[github] POST /repos/acme/app/releases: HTTP 201");
    expect(log).toContain("[roost] publish release to releases succeeded: release v1.2.0 of acme/app created");
    // The installation token never reaches the log.
    expect(log).not.toContain("ghs_standin_installation_token");
  });

  test("a retry after a broken upload updates the same release and sends only what GitHub lacks; a promotion sends nothing again", async () => {
    const pipeline = await createPipeline(t, owner, projectId, {
      execution_config: { publish: [{ type: "host_release", name: "release", environment: "releases", attach: ["**/*.apk", "**/*.aab"] }] },
    });
    const build = await tagBuild(pipeline.id, "v2.0.0", SHA_B);
    await succeed(build, FILES);
    host.github.failUploads = 1;
    const before = uploads().length;
    await publishHostReleases(t.ctx);
    const [failed] = await deploymentsOf(build.id);
    expect(failed.status).toBe("failed");
    expect(failed.failure_reason).toMatch(/^the host refused: 127\.0\.0\.1:\d+ answered HTTP 502 \(the host had an error\)$/);
    expect(host.github.releases.filter((r) => r.tag_name === "v2.0.0").map((r) => r.assets.map((a) => [a.name, a.state]))).toEqual([
      [["app-release.aab", "open"]],
    ]);

    const retried = await t.call("POST", `/v1/deployments/${failed.id}/retry`, { token: owner });
    expect(retried.status).toBe(201);
    await publishHostReleases(t.ctx);
    const retry = (await deploymentsOf(build.id)).find((d) => d.id === retried.body.deployment.id);
    expect(retry).toMatchObject({ status: "succeeded", retry_of: failed.id, store_answer: { details: { created: false, kept: [] } } });
    const releases = host.github.releases.filter((r) => r.tag_name === "v2.0.0");
    expect(releases.map((r) => r.assets.map((a) => [a.name, a.state, a.bytes.toString()]))).toEqual([
      [
        ["app-release.aab", "uploaded", "bundle bytes"],
        ["app-release.apk", "uploaded", "apk bytes v1.2.0"],
      ],
    ]);
    expect(uploads().length - before).toBe(3); // the broken one, then each file once

    const promoted = await t.call("POST", `/v1/builds/${build.id}/publish`, { token: owner, body: { publisher: "release" } });
    expect(promoted.status).toBe(201);
    await publishHostReleases(t.ctx);
    const again = (await deploymentsOf(build.id)).find((d) => d.id === promoted.body.deployment.id);
    expect(again.store_answer).toMatchObject({
      summary: "release v2.0.0 of acme/app updated: 0 assets uploaded, 2 already there",
      details: { created: false, uploaded: [], kept: ["app-release.aab", "app-release.apk"] },
    });
    expect(host.github.releases.filter((r) => r.tag_name === "v2.0.0")).toHaveLength(1);
    expect(uploads().length - before).toBe(3);
  });

  test("a build of a branch needs the publisher's tag; with one, the release is of that tag at the build's commit", async () => {
    const pipeline = await createPipeline(t, owner, projectId, {
      execution_config: { publish: [{ type: "host_release", name: "nightly", environment: "releases" }] },
    });
    const build = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id } })).body.build;
    await succeed(build, { "a.apk": "a" });
    await publishHostReleases(t.ctx);
    const [failed] = await deploymentsOf(build.id);
    expect(failed).toMatchObject({
      status: "failed",
      failure_reason: `build #${build.build_number} is of branch main, not of a tag: give the publisher a tag`,
    });
    const promoted = await t.call("POST", `/v1/builds/${build.id}/publish`, {
      token: owner,
      body: { publisher: "nightly", overrides: { tag: "nightly-1", release_name: "Nightly 1", draft: true } },
    });
    expect(promoted.status).toBe(201);
    await publishHostReleases(t.ctx);
    expect((await t.call("GET", `/v1/deployments/${promoted.body.deployment.id}`, { token: owner })).body.deployment.status).toBe("succeeded");
    expect(host.github.releases.find((r) => r.tag_name === "nightly-1")).toMatchObject({ name: "Nightly 1", draft: true, target_commitish: SHA_A });
    // GitHub finds no draft by its tag: it is found among the releases, and published by the next one.
    const published = await t.call("POST", `/v1/builds/${build.id}/publish`, {
      token: owner,
      body: { publisher: "nightly", overrides: { tag: "nightly-1", release_name: "Nightly 1" } },
    });
    await publishHostReleases(t.ctx);
    expect((await t.call("GET", `/v1/deployments/${published.body.deployment.id}`, { token: owner })).body.deployment.store_answer.details).toMatchObject({
      created: false,
      kept: ["a.apk"],
    });
    expect(host.github.releases.filter((r) => r.tag_name === "nightly-1").map((r) => [r.draft, r.assets.length])).toEqual([[false, 1]]);
  });
});

describe("a GitLab project's host release", () => {
  test("goes to the project's GitLab: files in the generic package registry, one release linking them, nothing sent twice", async () => {
    await createGitlabIntegration(t, owner, host);
    const gitlabProject = (await createProject(t, owner, "group/mobile")).id;
    await t.call("PUT", `/v1/projects/${gitlabProject}/environments/gitlab`, { token: owner, body: {} });
    const pipeline = await createPipeline(t, owner, gitlabProject, {
      execution_config: { publish: [{ type: "gitlab_release", name: "gl", environment: "gitlab", notes: { text: "Dark mode" } }] },
    });
    const { build } = await createBuild(t.ctx, {
      pipelineId: pipeline.id,
      branch: "v4.0.0",
      commitSha: SHA_B,
      triggerType: "webhook",
      triggerEvent: "tag",
      triggerRef: "refs/tags/v4.0.0",
      context: { fork: false, tag: "v4.0.0" },
    });
    await succeed(build, { "build/app.apk": "gitlab apk" });
    await publishHostReleases(t.ctx);
    const retried = await t.call("POST", `/v1/builds/${build.id}/publish`, { token: owner, body: { publisher: "gl" } });
    await publishHostReleases(t.ctx);
    const answers = (await deploymentsOf(build.id)).map((d) => [d.status, d.store_answer?.summary]);
    expect(answers.reverse()).toEqual([
      ["succeeded", "release v4.0.0 of group/mobile created: 1 asset uploaded, 0 already there"],
      ["succeeded", "release v4.0.0 of group/mobile updated: 0 assets uploaded, 1 already there"],
    ]);
    expect(retried.body.deployment.target).toBe("releases");
    expect(host.gitlab.releases.map((r) => [r.tag_name, r.ref, r.description, r.links.map((l) => l.url)])).toEqual([
      ["v4.0.0", SHA_B, "Dark mode", [`${host.url}/api/v4/projects/77/packages/generic/mobile/v4.0.0/app.apk`]],
    ]);
    expect(host.gitlab.packageFiles.map((f) => [f.file_name, f.bytes.toString()])).toEqual([["app.apk", "gitlab apk"]]);
  });
});

describe("release notes", () => {
  test("from_commits: the commits of the builds since this publisher last published to the environment, for every publisher kind", async () => {
    const publish = [
      { type: "host_release", name: "gh", environment: "notes", notes: { from_commits: true } },
      { type: "google_play", name: "play", environment: "notes", package_name: "com.example.app", notes: { from_commits: true, language: "de-DE" } },
    ];
    const pipeline = await createPipeline(t, owner, projectId, { execution_config: { publish } });
    const first = await tagBuild(pipeline.id, "n1", SHA_A, "Add login\nFix crash");
    await succeed(first, FILES);
    await publishHostReleases(t.ctx);
    const second = await tagBuild(pipeline.id, "n2", SHA_B, "Fix crash\nDark mode");
    await succeed(second, FILES);
    const third = await tagBuild(pipeline.id, "n3", SHA_A, "Faster sync");
    await succeed(third, FILES);
    const notes = Object.fromEntries((await deploymentsOf(third.id)).map((d) => [d.publisher, d.release_notes]));
    // gh published n1 (succeeded); play never published: its notes go back to the first build.
    expect(notes).toEqual({
      gh: { "en-US": "Fix crash\nDark mode\nFaster sync" },
      play: { "de-DE": "Add login\nFix crash\nDark mode\nFaster sync" },
    });
  });

  test("from a file of the repository: the runner is asked to upload it, the release's description is its text, and it is not attached", async () => {
    const publish = [{ type: "github_release", name: "notes-file", environment: "notes", notes: { file: "docs/RELEASE_NOTES.md" } }];
    const pipeline = await createPipeline(t, owner, projectId, { execution_config: { publish, artifact_patterns: ["**/*.apk"] } });
    const build = await tagBuild(pipeline.id, "v3.0.0", SHA_A);
    const job = await succeed(build, { "app.apk": "apk", "docs/RELEASE_NOTES.md": "  Offline mode.\n" });
    expect(job.config.execution_config.artifact_patterns).toEqual(["**/*.apk", "docs/RELEASE_NOTES.md"]);
    const [queued] = await deploymentsOf(build.id);
    expect(queued.artifacts.map((a: any) => [a.path, a.role])).toEqual([
      ["app.apk", "asset"],
      ["docs/RELEASE_NOTES.md", "notes"],
    ]);
    await publishHostReleases(t.ctx);
    expect(host.github.releases.find((r) => r.tag_name === "v3.0.0")).toMatchObject({
      body: "Offline mode.",
      assets: [expect.objectContaining({ name: "app.apk" })],
    });
  });

  test("a notes file the build did not upload fails the deployment saying where it was looked for", async () => {
    const publish = [{ type: "github_release", name: "no-notes", environment: "notes", notes: { file: "CHANGES.md" } }];
    const pipeline = await createPipeline(t, owner, projectId, { execution_config: { publish } });
    const build = await tagBuild(pipeline.id, "v3.1.0", SHA_B);
    await succeed(build, { "app.apk": "apk" });
    expect((await deploymentsOf(build.id))[0]).toMatchObject({
      status: "failed",
      failure_reason:
        "the release notes file CHANGES.md was neither in the repository nor written by the build (the runner uploads it after the build's steps)",
    });
  });
});

describe("roost.yaml", () => {
  test("the JSON Schema offers host_release and its other names, and says where a notes file comes from", async () => {
    const res = await t.call("GET", "/v1/schemas/pipeline-file.json");
    const publish = res.body.properties.pipelines.additionalProperties.properties.publish;
    const types = publish.items.oneOf.map((o: any) => o.properties.type.const ?? o.properties.type.enum);
    expect(types).toEqual(["google_play", "firebase_app_distribution", "app_store_connect", ["host_release", "github_release", "gitlab_release"]]);
    const host = publish.items.oneOf[3].properties;
    expect(Object.keys(host)).toEqual(expect.arrayContaining(["tag", "release_name", "draft", "prerelease", "attach", "notes"]));
    expect(host.notes.properties.file.description).toStartWith("a file of the repository, or one the build writes");
  });

  test("docs/pipelines.md's publishers example is a valid file; gitlab_release and github_release are host_release", async () => {
    const { parsePipelineFile } = await import("../../lib/pipelines/file.ts");
    const { fencedBlocks } = await import("../helpers/markdown.ts");
    const doc = await Bun.file(new URL("../../docs/pipelines.md", import.meta.url)).text();
    const example = fencedBlocks(doc).find((b) => b.info[0] === "yaml" && b.code.includes("github_release"))!;
    const parsed = parsePipelineFile(example.code);
    expect(parsed.ok && parsed.pipelines.get("release")!.publish.map((p: any) => [p.type, p.notes])).toEqual([
      ["google_play", { from_commits: true, language: "en-US" }],
      ["host_release", { file: "RELEASE_NOTES.md", language: "en-US" }],
    ]);
    const gitlab = parsePipelineFile("pipelines:\n  r:\n    publish: [{ type: gitlab_release, environment: gitlab }]\n");
    expect(gitlab.ok && gitlab.pipelines.get("r")!.publish).toEqual([
      { type: "host_release", environment: "gitlab", draft: false, prerelease: false, attach: ["**/*"] },
    ]);
  });
});
