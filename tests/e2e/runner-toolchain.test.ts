// A real runner process and daemon, for what issue 14 asks of a Flutter build's toolchain:
// the Flutter SDK a pipeline pins is installed once from the Flutter git repository (here a local
// git repository standing in for it: tags 3.27.1 and 3.28.0, a stable branch, and a bin/flutter
// that is scripts/flutter-stand-in/flutter) and reused; .fvmrc is honoured; the dependency cache
// of a second build restores what the first downloaded; a step that leaves `sleep … &` behind ends
// on time; a build past its timeout fails with reason timeout.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { http, REPO_ROOT } from "../helpers/daemon.ts";
import { GIT, sh as shIn, startGithubProject, type GithubProject } from "../helpers/ci-daemon.ts";

const work = mkdtempSync(join(tmpdir(), "roost-toolchain-e2e-"));
const repo = join(work, "app");
const flutterRepo = join(work, "flutter-git");
const runnerWork = join(work, "runner-work");
const sdks = join(runnerWork, "flutter");
// Unique, so the test can look for leftovers of its own and nobody else's.
const SLEEP = `sleep 36${Math.floor(Math.random() * 90 + 10)}`;
let ci: GithubProject;
let commit = "";
let featureCommit = "";

const sh = (cmd: string, cwd = work) => shIn(cmd, cwd, { PATH: process.env.PATH ?? "", HOME: work });
const pipeline = (execution_config: Record<string, unknown>) => ci.createPipeline({ execution_config });

async function runBuild(pipelineId: string, at = { commit_sha: commit, branch: "main" }, timeoutMs = 30_000): Promise<{ build: any; log: string }> {
  const { commit_sha, ...fields } = at;
  return waitForBuild(await ci.queueBuild(pipelineId, commit_sha, fields), timeoutMs);
}

/** A tag pushed at `sha`, as GitHub sends it (recorded fixture, retargeted), signed with the integration's secret; the build it started. */
const pushTag = (tag: string, sha: string) => ci.pushTag(tag, sha);

/** The build once it is over, and its log's lines' text. */
async function waitForBuild(id: string, timeoutMs = 30_000): Promise<{ build: any; log: string }> {
  const build = await ci.waitForBuild(id, (b) => b.status !== "queued" && b.status !== "running", timeoutMs);
  const lines = (await http(ci.url, "GET", `/v1/builds/${id}/logs`, { token: ci.owner })).body as { text: string }[];
  return { build, log: lines.map((l) => l.text).join("\n") };
}

const steps = (b: any) => b.step_results.map((s: { name: string; status: string }) => [s.name, s.status]);

/** This host's PATH without any folder that holds a flutter. */
const withoutFlutter = (process.env.PATH ?? "")
  .split(":")
  .filter((d) => d && !existsSync(join(d, "flutter")))
  .join(":");

beforeAll(async () => {
  // The Flutter repository stand-in: bin/flutter is the quick start's stand-in script.
  mkdirSync(join(flutterRepo, "bin"), { recursive: true });
  copyFileSync(join(REPO_ROOT, "scripts/flutter-stand-in/flutter"), join(flutterRepo, "bin", "flutter"));
  await sh(
    `chmod +x bin/flutter && git init -q -b stable && ${GIT} add . && ${GIT} commit -q -m 'Flutter stand-in 3.27.1' && git tag 3.27.1 && echo 2 > VERSION && ${GIT} add . && ${GIT} commit -q -m 'Flutter stand-in 3.28.0' && git tag 3.28.0`,
    flutterRepo,
  );

  mkdirSync(join(repo, "android"), { recursive: true });
  writeFileSync(join(repo, "pubspec.lock"), 'packages:\n  http:\n    version: "1.2.0"\n');
  writeFileSync(join(repo, "android", "build.gradle"), "// gradle\n");
  writeFileSync(join(repo, ".fvmrc"), JSON.stringify({ flutter: "3.28.0" }));
  await sh(`git init -q -b main && ${GIT} add . && ${GIT} commit -q -m 'app'`, repo);
  commit = await sh("git rev-parse HEAD", repo);
  await sh(`git checkout -q -b feature && echo '  path: {version: "1.9.0"}' >> pubspec.lock && ${GIT} commit -q -am 'bump path' && git checkout -q main`, repo);
  featureCommit = await sh("git rev-parse feature", repo);

  ci = await startGithubProject({
    daemon: { dataDir: join(work, "data"), env: { ROOST_RUNNER_LEASE_SECONDS: "4", ROOST_RUNNER_HEARTBEAT_SECONDS: "1" } },
    repository: { id: 78, full_name: "acme/toolchain", clone_url: repo },
    runner: {
      name: "toolchain",
      home: work,
      workDir: runnerWork,
      // No flutter on the runner's PATH: every SDK comes from ROOST_FLUTTER_GIT_URL.
      env: { PATH: withoutFlutter, ROOST_FLUTTER_GIT_URL: `file://${flutterRepo}` },
    },
  });
}, 60_000);

afterAll(async () => {
  await ci?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("Flutter SDK provisioning", () => {
  test("a pinned version is installed once from the Flutter git repository, recorded on the build, and reused", async () => {
    const id = await pipeline({
      flutter_version: "3.27.1",
      commands: { pre_build: ["flutter --version"] },
      platforms: ["android"],
      platform_commands: { android: ["echo no build"] },
    });
    const first = await runBuild(id);
    expect(first.build.status).toBe("succeeded");
    expect(steps(first.build).slice(0, 2)).toEqual([
      ["checkout", "succeeded"],
      ["flutter_install", "succeeded"],
    ]);
    const tag = await sh("git rev-parse 3.27.1", flutterRepo);
    expect(first.build.flutter_sdk).toEqual({ requested: "3.27.1", version: "3.27.1", source: "installed", revision: tag });
    expect(first.log).toContain(`installed Flutter 3.27.1 in ${join(sdks, "3.27.1")}`);
    expect(first.log).toContain("flutter stand-in: Flutter 0.0.0-stand-in");

    const second = await runBuild(id);
    expect(second.build.status).toBe("succeeded");
    expect(steps(second.build).map((s: string[]) => s[0])).not.toContain("flutter_install");
    expect(second.build.flutter_sdk).toEqual({ requested: "3.27.1", version: "3.27.1", source: "reused", revision: tag });
    expect(second.log).toContain(`[roost] Flutter 3.27.1 (the pipeline's flutter_version): ${join(sdks, "3.27.1")}, 3.27.1 at ${tag.slice(0, 12)} (reused)`);
  }, 60_000);

  test("flutter_version fvm installs what .fvmrc names, borrowing the objects of the one shared mirror", async () => {
    const { build, log } = await runBuild(
      await pipeline({ flutter_version: "fvm", platforms: ["android"], platform_commands: { android: ["flutter --version"] } }),
    );
    expect(build.status).toBe("succeeded");
    expect(build.flutter_sdk).toMatchObject({ requested: "3.28.0", version: "3.28.0", source: "installed" });
    expect(log).not.toMatch(/^cloning the Flutter repository/m); // the mirror of the first install served it
    expect(readFileSync(join(sdks, "3.28.0", ".git", "objects", "info", "alternates"), "utf8").trim()).toBe(join(sdks, ".flutter.git", "objects"));
    expect(await sh(`git -C ${join(sdks, "3.28.0")} remote get-url origin`)).toBe(`file://${flutterRepo}`);
  }, 60_000);

  test("with ROOST_FLUTTER_GIT_URL set and no flutter on PATH, a channel is installed from its branch", async () => {
    const { build, log } = await runBuild(
      await pipeline({ flutter_version: "stable", platforms: ["android"], platform_commands: { android: ["flutter --version"] } }),
    );
    expect(build.status).toBe("succeeded");
    expect(build.flutter_sdk).toEqual({ requested: "stable", version: "3.28.0", source: "installed", revision: await sh("git rev-parse stable", flutterRepo) });
    expect(await sh(`git -C ${join(sdks, "stable")} rev-parse --abbrev-ref HEAD`)).toBe("stable");
    expect(log).toContain("flutter stand-in: Flutter 0.0.0-stand-in");
  }, 60_000);

  test("a version the Flutter repository does not have fails the build, saying so", async () => {
    const { build, log } = await runBuild(await pipeline({ flutter_version: "3.99.0", commands: { pre_build: ["echo must not run"] } }));
    expect(build).toMatchObject({
      status: "failed",
      failure_reason: `Flutter 3.99.0 could not be installed on this runner from file://${flutterRepo} (step flutter_install failed with exit code 1)`,
    });
    expect(steps(build)).toEqual([
      ["checkout", "succeeded"],
      ["flutter_install", "failed"],
      ["pre_build", "skipped"],
      ["build_android", "skipped"],
    ]);
    expect(log).toContain("the Flutter repository has no tag 3.99.0");
    expect(log).not.toContain("must not run");
  }, 60_000);
});

describe("dependency caches", () => {
  test("the second build of a commit restores the cache and skips the downloads; another branch falls back to the default branch's", async () => {
    const env = [{ key: "FLUTTER_STAND_IN_DOWNLOAD_SECONDS", value: "1" }];
    const id = await pipeline({ flutter_version: "3.27.1", env, commands: { pre_build: ["flutter pub get"] }, platforms: ["android"] });
    const first = await runBuild(id);
    expect(first.build.status).toBe("succeeded");
    expect(first.log).toContain("packages of pubspec.lock: downloading (simulated, 1 s)");
    expect(first.log).toContain("Gradle distribution: downloading (simulated, 1 s)");
    expect(first.log).toMatch(/\[roost\] cache: saved [0-9a-f]{12} \(\d+ KiB: \$PUB_CACHE, \$GRADLE_USER_HOME\/wrapper\)/);

    const second = await runBuild(id);
    expect(second.build.status).toBe("succeeded");
    expect(second.log).toMatch(/\[roost\] cache: restored [0-9a-f]{12} of main \(exact key, \d+ KiB\)/);
    expect(second.log).not.toContain("downloading");
    expect(second.log).toContain("packages of pubspec.lock: already in");
    expect(second.log).not.toContain("cache: saved");
    const seconds = (b: any) => b.finished_at - b.started_at;
    expect(seconds(second.build)).toBeLessThanOrEqual(seconds(first.build));

    // pubspec.lock differs on the feature branch: no exact key, so the default branch's newest entry.
    const feature = await runBuild(id, { commit_sha: featureCommit, branch: "feature" });
    expect(feature.build.status).toBe("succeeded");
    expect(feature.log).toMatch(/cache: restored [0-9a-f]{12} of main \(newest of the default branch main/);
    expect(feature.log).toContain("packages of pubspec.lock: downloading");
    expect(feature.log).toContain("Gradle distribution: already in");
    expect(feature.log).toMatch(/cache: saved [0-9a-f]{12}/);
  }, 90_000);
});

describe("dependency caches of tags", () => {
  test("a release pipeline that runs only on tags restores what the project's main-branch pipeline saved", async () => {
    const env = [{ key: "FLUTTER_STAND_IN_DOWNLOAD_SECONDS", value: "1" }];
    // Cache paths of their own: a key no earlier test's pipeline saved.
    const execution = {
      flutter_version: "3.27.1",
      env,
      commands: { pre_build: ["flutter pub get"] },
      platforms: [],
      cache: { paths: ["$PUB_CACHE", "$GRADLE_USER_HOME/wrapper"] },
    };
    const ciPipeline = await pipeline(execution);
    const saved = await runBuild(ciPipeline);
    expect(saved.log).toMatch(/\[roost\] cache: saved [0-9a-f]{12}/);
    const release = await http(ci.url, "POST", `/v1/projects/${ci.projectId}/pipelines`, {
      token: ci.owner,
      body: { name: "release", trigger_config: { events: ["tag"] }, execution_config: execution },
    });
    expect(release.status).toBe(201);

    const tagged = await waitForBuild(await pushTag("v1.0.0", commit));
    expect(tagged.build).toMatchObject({ status: "succeeded", pipeline_id: release.body.pipeline.id, branch: "v1.0.0" });
    expect(tagged.log).toMatch(/\[roost\] cache: restored [0-9a-f]{12} of main \(exact key, from another pipeline of this project, \d+ KiB\)/);
    expect(tagged.log).not.toContain("downloading");
    expect(tagged.log).not.toContain("cache: saved");
  }, 90_000);
});

describe("timeouts and stray processes", () => {
  test("a step that leaves a background process behind ends on time; the process is stopped when the job ends, and the log says so", async () => {
    const started = Date.now();
    const { build, log } = await runBuild(
      await pipeline({
        flutter_version: "3.27.1",
        commands: { pre_build: [`${SLEEP} & echo started a server`], build: ["echo the build goes on"] },
        platforms: ["android"],
        platform_commands: { android: ["true"] },
      }),
    );
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(build).toMatchObject({ status: "succeeded", exit_code: 0 });
    expect(log).toContain("the build goes on");
    expect(log).toMatch(/\[roost\] stopping processes left running by step pre_build \(process group \d+\): the job is over/);
    await Bun.sleep(500);
    expect(await sh(`pgrep -f '^${SLEEP}$' || true`)).toBe("");
  }, 30_000);

  test("a build past its timeout is stopped and fails with reason timeout", async () => {
    const started = Date.now();
    const { build, log } = await runBuild(
      await pipeline({ flutter_version: "3.27.1", timeout_seconds: 3, commands: { pre_build: ["sleep 60"], post_build: ["echo must not run"] } }),
    );
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(build).toMatchObject({ status: "failed", exit_code: 124, failure_reason: "timeout: the build ran past its timeout of 3 s" });
    expect(steps(build)).toEqual([
      ["checkout", "succeeded"],
      ["pre_build", "failed"],
      ["build_android", "skipped"],
      ["post_build", "skipped"],
    ]);
    expect(log).toContain("[roost] timeout: the build ran past its timeout of 3 s; stopping the running command's process tree");
    expect(log).not.toContain("must not run");
  }, 30_000);

  test("a step past its own timeout fails the build with reason timeout", async () => {
    const { build } = await runBuild(
      await pipeline({
        flutter_version: "3.27.1",
        step_timeout_seconds: { build: 1 },
        commands: { build: ["sleep 60"] },
        platforms: ["android"],
        platform_commands: { android: ["true"] },
      }),
    );
    expect(build).toMatchObject({ status: "failed", exit_code: 124, failure_reason: "timeout: step build ran past its timeout of 1 s" });
  }, 30_000);
});
