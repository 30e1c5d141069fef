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
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { sign } from "@octokit/webhooks-methods";
import { BUN, REPO_ROOT, ROOST, http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";

const work = mkdtempSync(join(tmpdir(), "roost-host-release-e2e-"));
const repo = join(work, "app");
const flutterDir = join(work, "flutter-stand-in");
const WEBHOOK_SECRET = "0123456789abcdef-secret";
let daemon: Daemon;
let host: HostApiStandIn;
let runnerProc: Subprocess | undefined;
let owner = "";
let projectId = "";
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

async function sh(cmd: string, cwd = work): Promise<string> {
  const p = Bun.spawn(["bash", "-c", cmd], { cwd, stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "", HOME: work } });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${cmd}: ${err}`);
  return out.trim();
}
const GIT = "git -c user.email=ci@example.test -c user.name=CI";

/** A tag pushed at `sha`, as GitHub sends it (the recorded fixture, retargeted); the build it starts. */
async function pushTag(tag: string, sha: string): Promise<string> {
  const payload = JSON.parse(readFileSync(join(REPO_ROOT, "tests/fixtures/webhooks/github/push__tag_created.json"), "utf8"));
  Object.assign(payload.repository, { id: 77, full_name: "acme/app", name: "app", default_branch: "main" });
  payload.repository.owner.login = "acme";
  if (payload.installation) payload.installation.id = Number(host.github.installationId);
  Object.assign(payload, { ref: `refs/tags/${tag}`, after: sha });
  Object.assign(payload.head_commit, { id: sha, message: "Release 1.0" });
  const body = JSON.stringify(payload);
  const res = await fetch(`${daemon.url}/v1/webhooks/github`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": "push",
      "x-github-delivery": crypto.randomUUID(),
      "x-hub-signature-256": await sign(WEBHOOK_SECRET, body),
    },
    body,
  });
  const answer = (await res.json()) as { builds?: { id: string }[] };
  if (answer.builds?.length !== 1) throw new Error(`the tag push did not start one build: ${JSON.stringify(answer)}`);
  return answer.builds[0]!.id;
}

async function waitFor<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 40_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: ${JSON.stringify(value)}`);
    await Bun.sleep(150);
  }
}
const deployment = (id: string) => http(daemon.url, "GET", `/v1/deployments/${id}`, { token: owner }).then((r) => r.body.deployment);
const settled = (d: any) => ["succeeded", "failed", "rejected"].includes(d.status);
const uploads = () => host.requests.filter((r) => r.method === "POST" && r.path.startsWith("/api/uploads/"));

beforeAll(async () => {
  mkdirSync(repo, { recursive: true });
  writeFileSync(join(repo, "roost.yaml"), ROOST_YAML);
  writeFileSync(join(repo, "RELEASE_NOTES.md"), "Offline mode and a faster start.\n");
  await sh(`git init -q -b main && ${GIT} add . && ${GIT} commit -q -m 'Release 1.0' && git tag v1.0.0`, repo);
  tagCommit = await sh("git rev-parse HEAD", repo);
  mkdirSync(flutterDir);
  copyFileSync(join(REPO_ROOT, "scripts/flutter-stand-in/flutter"), join(flutterDir, "flutter"));
  await sh(`chmod +x ${join(flutterDir, "flutter")}`);

  daemon = await startDaemon({ dataDir: join(work, "data"), cleanup: false, env: { ROOST_RUNNER_LEASE_SECONDS: "6", ROOST_RUNNER_HEARTBEAT_SECONDS: "1" } });
  host = await startHostApiStandIn();
  host.github.repos.push({ id: 77, full_name: "acme/app", default_branch: "main", private: true, clone_url: repo });
  host.repositories.set("acme/app", repo);
  owner = (await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } })).body.session_token;
  await http(daemon.url, "POST", "/v1/integrations", {
    token: owner,
    body: {
      provider: "github",
      name: "gh",
      api_url: host.url,
      app_id: host.github.appId,
      installation_id: host.github.installationId,
      private_key: host.github.privateKeyPem,
      webhook_secret: WEBHOOK_SECRET,
    },
  });
  const repoId = (await http(daemon.url, "GET", "/v1/integration-repositories", { token: owner })).body.repositories[0].id;
  projectId = (await http(daemon.url, "POST", "/v1/projects", { token: owner, body: { repository_id: repoId } })).body.project.id;
  const env = await http(daemon.url, "PUT", `/v1/projects/${projectId}/environments/github`, { token: owner, body: { allowed_refs: ["refs/tags/v*"] } });
  if (env.status !== 200) throw new Error(JSON.stringify(env.body));

  const created = (await http(daemon.url, "POST", "/v1/runners", { token: owner, body: { name: "builder" } })).body;
  runnerProc = Bun.spawn([BUN, ROOST, "runner", "--unsafe-allow-same-user"], {
    cwd: REPO_ROOT,
    env: {
      PATH: `${flutterDir}:${process.env.PATH}`,
      HOME: work,
      ROOST_URL: daemon.url,
      ROOST_RUNNER_ID: created.runner.id,
      ROOST_RUNNER_TOKEN: created.token,
      ROOST_RUNNER_WORKDIR: join(work, "runner-work"),
      ROOST_RUNNER_GRACE_SECONDS: "1",
    },
    stdout: "ignore",
    stderr: "ignore",
  });
}, 60_000);

afterAll(async () => {
  runnerProc?.kill("SIGKILL");
  await daemon?.stop();
  await host?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("a tag publishes a GitHub Release", () => {
  let buildId = "";
  let firstId = "";

  test("the daemon creates the release of the tag; an upload that breaks off fails the deployment", async () => {
    host.github.failUploads = 1;
    buildId = await pushTag("v1.0.0", tagCommit);
    const build = await waitFor(
      "the tag build",
      () => http(daemon.url, "GET", `/v1/builds/${buildId}`, { token: owner }).then((r) => r.body.build),
      (b) => ["succeeded", "failed", "canceled"].includes(b.status),
    );
    expect(build).toMatchObject({ status: "succeeded", trigger_event: "tag", branch: "v1.0.0" });
    const artifacts = (await http(daemon.url, "GET", `/v1/builds/${buildId}/artifacts`, { token: owner })).body.artifacts;
    expect(artifacts.map((a: any) => a.path)).toEqual(["RELEASE_NOTES.md", "build/app/outputs/flutter-apk/app-release.apk"]);
    const [first] = await waitFor(
      "the first deployment",
      () => http(daemon.url, "GET", `/v1/builds/${buildId}/deployments`, { token: owner }).then((r) => r.body.deployments as any[]),
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
    const retried = await http(daemon.url, "POST", `/v1/deployments/${firstId}/retry`, { token: owner });
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
    const log = await fetch(`${daemon.url}/v1/builds/${buildId}/logs`, { headers: { authorization: `Bearer ${owner}`, accept: "text/plain" } }).then((r) =>
      r.text(),
    );
    expect(log).toContain("[github] release v1.0.0 (");
    expect(log).toContain("existed: updated its name, notes and state");
    expect(log).not.toContain("ghs_standin_installation_token");
  });

  test("publishing the build again sends nothing GitHub has and makes no second release", async () => {
    const again = await http(daemon.url, "POST", `/v1/builds/${buildId}/publish`, { token: owner, body: { publisher: "github" } });
    expect(again.status).toBe(201);
    const done = await waitFor("the second publish", () => deployment(again.body.deployment.id), settled);
    expect(done.store_answer).toMatchObject({ summary: "release v1.0.0 of acme/app updated: 0 assets uploaded, 1 already there" });
    expect(host.github.releases).toHaveLength(1);
    expect(uploads()).toHaveLength(2);
    expect(host.requests.filter((r) => r.method === "POST" && r.path === "/repos/acme/app/releases")).toHaveLength(1);
  });
});
