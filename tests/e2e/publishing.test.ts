// Publishing with a real daemon and a real runner process (docs/publishing.md): roost.yaml in a
// real git repository names the publishers; GitHub webhooks (signed, from recorded payloads)
// start the builds; the runner publishes to the Google stand-in (tests/support/store-stand-ins/),
// which verifies the service accounts' JWTs and records every upload's bytes.
//  - a tag builds, waits for approval, is approved, and publishes to a Play track with a staged
//    rollout and notes; the deployment records the store's answer, and the environment what it holds;
//  - a refusal of the store (a version code used already) fails the publish with the store's message;
//  - the same build promoted to production goes out as the same bytes (by SHA-256), with
//    production's own service account;
//  - a pull request builds and never publishes;
//  - an environment's secrets never reach a build step, a pull request, or another environment's publish.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { http } from "../helpers/daemon.ts";
import { GIT, isFinished, sh as shIn, startGithubProject, type GithubProject } from "../helpers/ci-daemon.ts";
import { pollUntil } from "../helpers/poll.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { startGoogleStandIn, type GoogleStandIn, type ServiceAccount } from "../support/store-stand-ins/google.ts";

const work = mkdtempSync(join(tmpdir(), "roost-publishing-e2e-"));
const repo = join(work, "app");
const FIREBASE_APP = "1:123456789012:android:0a1b2c3d4e5f6789";
let ci: GithubProject;
let host: HostApiStandIn;
let google: GoogleStandIn;
let testersKey: ServiceAccount;
let productionKey: ServiceAccount;
const commits: Record<string, string> = {};

const ROOST_YAML = `pipelines:
  release:
    triggers: { events: [push, tag, pull_request], branches: [main] }
    platforms: []
    commands:
      build:
        - mkdir -p build/app/outputs/bundle/release
        - printf 'bundle %s versionCode=%s' "$ROOST_COMMIT_SHA" "$(cat VERSION_CODE)" > build/app/outputs/bundle/release/app-release.aab
        - echo "a build step sees [\${GOOGLE_PLAY_SERVICE_ACCOUNT:-nothing}] [\${FIREBASE_SERVICE_ACCOUNT:-nothing}]"
    artifact_patterns: [build/app/outputs/bundle/**/*.aab]
    publish:
      - type: google_play
        name: play
        environment: beta-testers
        package_name: com.example.app
        track: beta
        user_fraction: 0.2
        notes:
          text: { en-US: "Faster start", de-DE: "Schnellerer Start" }
      - type: firebase_app_distribution
        name: firebase
        environment: qa
        app_id: "${FIREBASE_APP}"
        artifact: "**/*.aab"
        testers: [tester@example.com]
        groups: [qa-team]
        notes: { from_commits: true }
`;

const sh = (cmd: string, cwd = work) => shIn(cmd, cwd, { PATH: process.env.PATH ?? "", HOME: work });
const deliver = (event: string, payload: unknown) => ci.deliverWebhook(event, payload);
const fixture = (name: string) => ci.githubPayload(name);

/** A tag pushed at `sha`, as GitHub sends it (recorded fixture, retargeted). */
const pushTag = (tag: string, sha: string, message: string) => ci.pushTag(tag, sha, message);

/** A pull request from a branch of the same repository into main, head at `sha`. */
function openPullRequest(sha: string): Promise<string> {
  const payload = fixture("pull_request__opened.json");
  const pr = payload.pull_request;
  pr.head.sha = sha;
  pr.head.ref = "feature";
  pr.base.ref = "main";
  for (const side of [pr.head, pr.base]) Object.assign(side.repo, { id: 77, full_name: "acme/app", name: "app" });
  return deliver("pull_request", payload);
}

const waitFor = <T>(what: string, read: () => Promise<T>, done: (v: T) => boolean) => pollUntil(what, read, done, 40_000, 150);

const buildOf = (id: string) => ci.buildOf(id);
const deploymentsOf = (id: string) => http(ci.url, "GET", `/v1/builds/${id}/deployments`, { token: ci.owner }).then((r) => r.body.deployments as any[]);
const logOf = (id: string) => ci.buildLog(id);
const finished = isFinished;
const settled = (d: any) => ["succeeded", "failed", "rejected"].includes(d.status);

async function putSecret(env: string, key: string, value: string): Promise<void> {
  const res = await http(ci.url, "PUT", `/v1/projects/${ci.projectId}/environments/${env}/secrets/${key}`, { token: ci.owner, body: { value, secret: true } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
}

beforeAll(async () => {
  google = await startGoogleStandIn();
  testersKey = await google.serviceAccount("beta-releaser");
  productionKey = await google.serviceAccount("production-releaser");
  const firebaseKey = await google.serviceAccount("firebase-distributor");
  google.play.addApp("com.example.app", [testersKey.client_email, productionKey.client_email]);
  google.firebase.addApp(FIREBASE_APP, [firebaseKey.client_email], ["qa-team"]);

  mkdirSync(repo, { recursive: true });
  writeFileSync(join(repo, "roost.yaml"), ROOST_YAML);
  writeFileSync(join(repo, "VERSION_CODE"), "1\n");
  await sh(`git init -q -b main && ${GIT} add . && ${GIT} commit -q -m 'First release'`, repo);
  commits.first = await sh("git rev-parse HEAD", repo);
  // Another commit that forgot to raise the version code: Play refuses its bundle.
  writeFileSync(join(repo, "README.md"), "# app\n");
  await sh(`${GIT} add . && ${GIT} commit -q -m 'Docs, same version code'`, repo);
  commits.second = await sh("git rev-parse HEAD", repo);
  await sh(`git checkout -q -b feature && echo change > feature.txt && ${GIT} add . && ${GIT} commit -q -m 'A feature' && git checkout -q main`, repo);
  commits.feature = await sh("git rev-parse feature", repo);

  ci = await startGithubProject({
    daemon: { dataDir: join(work, "data"), cleanup: false, env: { ROOST_RUNNER_LEASE_SECONDS: "6", ROOST_RUNNER_HEARTBEAT_SECONDS: "1" } },
    repository: { id: 77, full_name: "acme/app", clone_url: repo },
    runner: {
      name: "publisher",
      home: work,
      env: { ROOST_TEST_ANDROID_PUBLISHER_URL: google.url, ROOST_TEST_FIREBASE_APP_DISTRIBUTION_URL: google.url },
    },
  });
  ({ host } = ci);
  host.repositories.set("acme/app", repo);

  for (const [name, body] of [
    ["beta-testers", { requires_approval: true, approvers: ["owner@example.test"], allowed_refs: ["refs/tags/v*"] }],
    ["qa", {}],
    ["production", {}],
  ] as const) {
    const res = await http(ci.url, "PUT", `/v1/projects/${ci.projectId}/environments/${name}`, { token: ci.owner, body });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  }
  await putSecret("beta-testers", "GOOGLE_PLAY_SERVICE_ACCOUNT", testersKey.json);
  await putSecret("production", "GOOGLE_PLAY_SERVICE_ACCOUNT", productionKey.json);
  await putSecret("qa", "FIREBASE_SERVICE_ACCOUNT", firebaseKey.json);
}, 60_000);

afterAll(async () => {
  await ci?.stop();
  await google?.stop();
  rmSync(work, { recursive: true, force: true });
});

let firstBuild = "";
let bundleSha = "";

describe("publishing with a real daemon and runner", () => {
  test("a tag builds, waits for approval, is approved, and publishes to a Play track with a staged rollout and notes", async () => {
    firstBuild = await pushTag("v1.0.0", commits.first!, "First release");
    const build = await waitFor("the tag build", () => buildOf(firstBuild), finished);
    expect(build).toMatchObject({ status: "succeeded", trigger_event: "tag", branch: "v1.0.0", definition_source: { source: "file", path: "roost.yaml" } });
    const artifacts = (await http(ci.url, "GET", `/v1/builds/${firstBuild}/artifacts`, { token: ci.owner })).body.artifacts;
    bundleSha = artifacts[0].sha256;

    // Play waits for its approver; Firebase's environment needs none and publishes at once.
    const waiting = await waitFor(
      "deployments",
      () => deploymentsOf(firstBuild),
      (ds) => ds.length === 2 && ds.some((d) => d.publisher === "firebase" && settled(d)),
    );
    const play = waiting.find((d) => d.publisher === "play");
    expect(play).toMatchObject({ status: "waiting_approval", environment: "beta-testers", target: "com.example.app beta" });
    expect(google.play.uploads).toEqual([]);
    const firebase = waiting.find((d) => d.publisher === "firebase");
    expect(firebase).toMatchObject({
      status: "succeeded",
      store_answer: { summary: `Firebase App Distribution has 1.0.0 (1) of ${FIREBASE_APP}, distributed`, version: "1.0.0 (1)" },
    });
    expect(google.firebase.uploads.map((u) => u.sha256)).toEqual([bundleSha]);
    expect(google.firebase.releases(FIREBASE_APP)[0]).toMatchObject({
      testers: ["tester@example.com"],
      groups: ["qa-team"],
      releaseNotes: { text: expect.stringContaining("First release") },
    });

    const approved = await http(ci.url, "POST", `/v1/deployments/${play.id}/approve`, { token: ci.owner });
    expect(approved.body.deployment).toMatchObject({ status: "approved", decided_by: "owner@example.test" });
    const done = await waitFor(
      "the Play publish",
      () => http(ci.url, "GET", `/v1/deployments/${play.id}`, { token: ci.owner }).then((r) => r.body.deployment),
      settled,
    );
    expect(done).toMatchObject({
      status: "succeeded",
      decided_by: "owner@example.test",
      store_answer: {
        summary: "Google Play has version code 1 on track beta (inProgress, 20 % of users)",
        version: "1",
        details: { package_name: "com.example.app", track: "beta", status: "inProgress" },
      },
      artifacts: [{ path: "build/app/outputs/bundle/release/app-release.aab", sha256: bundleSha, role: "binary" }],
    });
    expect(google.play.track("com.example.app", "beta")).toEqual([
      {
        versionCodes: ["1"],
        status: "inProgress",
        userFraction: 0.2,
        releaseNotes: [
          { language: "en-US", text: "Faster start" },
          { language: "de-DE", text: "Schnellerer Start" },
        ],
      },
    ]);
    expect(google.play.uploads).toEqual([
      { package_name: "com.example.app", kind: "bundles", version_code: 1, sha256: bundleSha, size: expect.any(Number), by: testersKey.client_email },
    ]);

    const log = await logOf(firstBuild);
    expect(log).toContain("[roost] publish play to beta-testers (com.example.app beta) waits for approval.");
    expect(log).toContain("[roost] publish play to beta-testers approved by owner@example.test; it is queued for a runner.");
    expect(log).toContain(
      `[roost] build/app/outputs/bundle/release/app-release.aab (${done.artifacts[0].size} bytes) downloaded; SHA-256 ${bundleSha} as the build recorded`,
    );
    expect(log).toContain("[google play] uploaded build/app/outputs/bundle/release/app-release.aab: version code 1");
    expect(log).toContain("[roost] secrets of environment beta-testers written for this publish (0600, removed when it ends): GOOGLE_PLAY_SERVICE_ACCOUNT");
    expect(log).toContain("[roost] this publish's secrets and files were removed from the runner");
    expect(log).toContain("[roost] publish play to beta-testers succeeded: Google Play has version code 1 on track beta (inProgress, 20 % of users)");

    const env = (await http(ci.url, "GET", `/v1/projects/${ci.projectId}/environments/beta-testers`, { token: ci.owner })).body.environment;
    expect(env.current).toEqual([
      expect.objectContaining({ target: "com.example.app beta", publisher: "play", build_id: firstBuild, commit_sha: commits.first, version: "1" }),
    ]);
  }, 90_000);

  test("a store refusal fails the publish with the store's message", async () => {
    const second = await pushTag("v1.0.1", commits.second!, "Docs, same version code");
    await waitFor("the second tag build", () => buildOf(second), finished);
    const play = (
      await waitFor(
        "its Play deployment",
        () => deploymentsOf(second),
        (ds) => ds.some((d) => d.publisher === "play"),
      )
    ).find((d) => d.publisher === "play");
    await http(ci.url, "POST", `/v1/deployments/${play.id}/approve`, { token: ci.owner });
    const failed = await waitFor(
      "the refused publish",
      () => http(ci.url, "GET", `/v1/deployments/${play.id}`, { token: ci.owner }).then((r) => r.body.deployment),
      settled,
    );
    const refusal =
      "this version code was already used for another upload of com.example.app; raise the build number (e.g. flutter build appbundle --build-number=$ROOST_BUILD_NUMBER). Google Play said: 403 Version code 1 has already been used.";
    expect(failed).toMatchObject({ status: "failed", failure_reason: refusal, store_answer: null });
    const log = await logOf(second);
    expect(log).toContain(`[roost] ${refusal}`);
    expect(log).toContain(`[roost] publish play to beta-testers failed: ${refusal}`);
    // The track still holds the first release.
    expect(google.play.track("com.example.app", "beta")[0]!.versionCodes).toEqual(["1"]);
  }, 60_000);

  test("the same build promoted to production goes out as the same bytes, with production's own key", async () => {
    const before = google.requests.length;
    const promoted = await http(ci.url, "POST", `/v1/builds/${firstBuild}/publish`, {
      token: ci.owner,
      body: { publisher: "play", environment: "production", overrides: { track: "production", release_status: "completed" } },
    });
    expect(promoted.status).toBe(201);
    expect(promoted.body.deployment).toMatchObject({ trigger: "promotion", environment: "production", status: "approved", artifacts: [{ sha256: bundleSha }] });
    const done = await waitFor(
      "the promotion",
      () => http(ci.url, "GET", `/v1/deployments/${promoted.body.deployment.id}`, { token: ci.owner }).then((r) => r.body.deployment),
      settled,
    );
    expect(done).toMatchObject({
      status: "succeeded",
      store_answer: { summary: "Google Play has version code 1 on track production (completed)", version: "1" },
    });
    expect(google.play.track("com.example.app", "production")).toEqual([
      {
        versionCodes: ["1"],
        status: "completed",
        releaseNotes: [
          { language: "en-US", text: "Faster start" },
          { language: "de-DE", text: "Schnellerer Start" },
        ],
      },
    ]);
    // Version code 1 is the bundle the tag build made: Play has its bytes, so nothing was uploaded again.
    expect(google.play.uploads.map((u) => [u.version_code, u.sha256])).toEqual([[1, bundleSha]]);
    expect(await logOf(firstBuild)).toContain("is already in Play as version code 1 (same SHA-256): not uploaded again");
    // Production's publish spoke to Google as production's service account only.
    const accounts = new Set(
      google.requests
        .slice(before)
        .filter((r) => r.as && r.path.includes("androidpublisher"))
        .map((r) => r.as),
    );
    expect([...accounts]).toEqual([productionKey.client_email]);
    const env = (await http(ci.url, "GET", `/v1/projects/${ci.projectId}/environments`, { token: ci.owner })).body.environments;
    expect(env.find((e: any) => e.name === "production").current).toEqual([
      expect.objectContaining({ target: "com.example.app production", build_id: firstBuild, version: "1" }),
    ]);
  }, 60_000);

  test("a pull request builds and never publishes", async () => {
    const uploads = google.play.uploads.length + google.firebase.uploads.length;
    const pr = await openPullRequest(commits.feature!);
    const build = await waitFor("the pull request's build", () => buildOf(pr), finished);
    expect(build).toMatchObject({ status: "succeeded", trigger_event: "pull_request" });
    await Bun.sleep(1500);
    expect(await deploymentsOf(pr)).toEqual([]);
    expect(await logOf(pr)).toContain("[roost] publishers do not run for a pull request: play, firebase skipped.");
    expect(google.play.uploads.length + google.firebase.uploads.length).toBe(uploads);
  }, 60_000);

  test("environment secrets never reach a build step, a pull request's build, or another environment", async () => {
    const builds = (await http(ci.url, "GET", `/v1/projects/${ci.projectId}/builds?limit=50`, { token: ci.owner })).body.builds;
    expect(builds.length).toBeGreaterThanOrEqual(3);
    for (const b of builds) {
      const log = await logOf(b.id);
      expect(log).toContain("a build step sees [nothing] [nothing]");
      for (const key of [testersKey, productionKey]) {
        expect(log).not.toContain(JSON.parse(key.json).private_key_id);
        expect(log).not.toContain("BEGIN PRIVATE KEY");
      }
      expect(log).not.toContain("ya29.");
    }
    // beta-testers' key spoke only for the beta publishes; production's only for the promotion.
    const byAccount = (email: string) => google.requests.filter((r) => r.as === email).map((r) => r.path);
    expect(byAccount(testersKey.client_email).every((p) => !p.includes("/tracks/production"))).toBe(true);
    expect(byAccount(productionKey.client_email).some((p) => p.includes("/tracks/production"))).toBe(true);
    expect(byAccount(productionKey.client_email).every((p) => !p.includes("/tracks/beta"))).toBe(true);
  }, 60_000);
});
