// A host release with a real daemon and a real runner process (docs/publishing.md "Host
// releases"): roost.yaml in a real git repository names a github_release publisher whose notes
// are a file of the repository; a signed GitHub tag push (recorded payload) starts the build; the
// runner builds and uploads the APK and the notes file; the daemon makes the GitHub Release on
// the host-API stand-in (tests/support/host-api-stand-in.ts, which serves GitHub's releases and
// asset uploads as docs.github.com documents them).
//  - an upload that breaks off fails the deployment; its retry updates the same release and
//    attaches the APK, byte for byte: one release of the tag, one asset;
//  - publishing the build again sends nothing GitHub already has.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { http } from "../helpers/daemon.ts";
import { GIT, sh as shIn, startGithubProject, type GithubProject } from "../helpers/ci-daemon.ts";
import { pollUntil } from "../helpers/poll.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";

const work = mkdtempSync(join(tmpdir(), "roost-host-release-e2e-"));
const repo = join(work, "app");
let ci: GithubProject;
let host: HostApiStandIn;
let tagCommit = "";

const ROOST_YAML = `pipelines:
  release:
    triggers: { events: [tag] }
    platforms: []
    commands:
      build:
        - mkdir -p build/app/outputs/flutter-apk
        - printf 'apk of %s' "$ROOST_COMMIT_SHA" > build/app/outputs/flutter-apk/app-release.apk
    artifact_patterns: [build/app/outputs/**/*.apk]
    publish:
      - type: github_release
        name: github
        environment: github
        refs: [refs/tags/v*]
        notes: { file: RELEASE_NOTES.md }
`;

const sh = (cmd: string, cwd = work) => shIn(cmd, cwd, { PATH: process.env.PATH ?? "", HOME: work });
/** A tag pushed at `sha`, as GitHub sends it (the recorded fixture, retargeted); the build it starts. */
const pushTag = (tag: string, sha: string) => ci.pushTag(tag, sha, "Release 1.0");
const waitFor = <T>(what: string, read: () => Promise<T>, done: (v: T) => boolean) => pollUntil(what, read, done, 40_000, 150);
const deployment = (id: string) => http(ci.url, "GET", `/v1/deployments/${id}`, { token: ci.owner }).then((r) => r.body.deployment);
const settled = (d: any) => ["succeeded", "failed", "rejected"].includes(d.status);
const uploads = () => host.requests.filter((r) => r.method === "POST" && r.path.startsWith("/api/uploads/"));

beforeAll(async () => {
  mkdirSync(repo, { recursive: true });
  writeFileSync(join(repo, "roost.yaml"), ROOST_YAML);
  writeFileSync(join(repo, "RELEASE_NOTES.md"), "Offline mode and a faster start.\n");
  await sh(`git init -q -b main && ${GIT} add . && ${GIT} commit -q -m 'Release 1.0' && git tag v1.0.0`, repo);
  tagCommit = await sh("git rev-parse HEAD", repo);
  ci = await startGithubProject({
    daemon: { dataDir: join(work, "data"), cleanup: false, env: { ROOST_RUNNER_LEASE_SECONDS: "6", ROOST_RUNNER_HEARTBEAT_SECONDS: "1" } },
    repository: { id: 77, full_name: "acme/app", clone_url: repo },
    runner: { name: "builder", home: work },
  });
  ({ host } = ci);
  host.repositories.set("acme/app", repo);
  const env = await http(ci.url, "PUT", `/v1/projects/${ci.projectId}/environments/github`, { token: ci.owner, body: { allowed_refs: ["refs/tags/v*"] } });
  if (env.status !== 200) throw new Error(JSON.stringify(env.body));
}, 60_000);

afterAll(async () => {
  await ci?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("a tag publishes a GitHub Release", () => {
  let buildId = "";
  let firstId = "";

  test("the daemon creates the release of the tag; an upload that breaks off fails the deployment", async () => {
    host.github.failUploads = 1;
    buildId = await pushTag("v1.0.0", tagCommit);
    const build = await ci.waitForBuild(buildId, undefined, 40_000, 150);
    expect(build).toMatchObject({ status: "succeeded", trigger_event: "tag", branch: "v1.0.0" });
    const artifacts = (await http(ci.url, "GET", `/v1/builds/${buildId}/artifacts`, { token: ci.owner })).body.artifacts;
    expect(artifacts.map((a: any) => a.path)).toEqual(["RELEASE_NOTES.md", "build/app/outputs/flutter-apk/app-release.apk"]);
    const [first] = await waitFor(
      "the first deployment",
      () => http(ci.url, "GET", `/v1/builds/${buildId}/deployments`, { token: ci.owner }).then((r) => r.body.deployments as any[]),
      (ds) => ds.length === 1 && settled(ds[0]),
    );
    firstId = first.id;
    expect(first).toMatchObject({ publisher: "github", publisher_type: "host_release", status: "failed", runner_id: null });
    expect(first.failure_reason).toMatch(/^the host refused: .* answered HTTP 502/);
    expect(host.github.releases.map((r) => [r.tag_name, r.target_commitish, r.body, r.assets.map((a) => a.state)])).toEqual([
      ["v1.0.0", tagCommit, "Offline mode and a faster start.", ["open"]],
    ]);
  });

  test("its retry attaches the APK to the same release, byte for byte: one release, one asset", async () => {
    const retried = await http(ci.url, "POST", `/v1/deployments/${firstId}/retry`, { token: ci.owner });
    expect(retried.status).toBe(201);
    const done = await waitFor("the retry", () => deployment(retried.body.deployment.id), settled);
    expect(done).toMatchObject({
      status: "succeeded",
      retry_of: firstId,
      store_answer: {
        summary: "release v1.0.0 of acme/app updated: 1 asset uploaded, 0 already there",
        version: "v1.0.0",
        url: "https://github.example.test/acme/app/releases/tag/v1.0.0",
      },
    });
    expect(host.github.releases.map((r) => [r.tag_name, r.assets.map((a) => [a.name, a.state, a.bytes.toString()])])).toEqual([
      ["v1.0.0", [["app-release.apk", "uploaded", `apk of ${tagCommit}`]]],
    ]);
    expect(uploads()).toHaveLength(2);
    const log = await ci.buildLog(buildId);
    expect(log).toContain("[github] release v1.0.0 (");
    expect(log).toContain("existed: updated its name, notes and state");
    expect(log).not.toContain("ghs_standin_installation_token");
  });

  test("publishing the build again sends nothing GitHub has and makes no second release", async () => {
    const again = await http(ci.url, "POST", `/v1/builds/${buildId}/publish`, { token: ci.owner, body: { publisher: "github" } });
    expect(again.status).toBe(201);
    const done = await waitFor("the second publish", () => deployment(again.body.deployment.id), settled);
    expect(done.store_answer).toMatchObject({ summary: "release v1.0.0 of acme/app updated: 0 assets uploaded, 1 already there" });
    expect(host.github.releases).toHaveLength(1);
    expect(uploads()).toHaveLength(2);
    expect(host.requests.filter((r) => r.method === "POST" && r.path === "/repos/acme/app/releases")).toHaveLength(1);
  });
});
