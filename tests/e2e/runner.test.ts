// A real runner process building a real git repository: the daemon, the
// `roost runner` process, a local repository, and a `flutter` stand-in on the runner's PATH (a
// script that prints like flutter and writes an .apk; no Flutter SDK is installed here).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import {
  commitRepository,
  isFinished,
  sh as shIn,
  spawnHostRunner,
  startGithubProject,
  WRITE_APK,
  writeFlutterStandIn,
  type GithubProject,
  type RunnerProcess,
} from "../helpers/ci-daemon.ts";
import { SseReader } from "../helpers/sse.ts";

const work = mkdtempSync(join(tmpdir(), "roost-runner-e2e-"));
const repo = join(work, "app");
const flutterDir = join(work, "flutter-stand-in");
let ci: GithubProject;
let daemon: Daemon;
let runnerProc: RunnerProcess | undefined;
let commit = "";
let runner = { id: "", token: "" };
const DAEMON_ENV = { ROOST_RUNNER_LEASE_SECONDS: "4", ROOST_RUNNER_HEARTBEAT_SECONDS: "1" };
const sh = (cmd: string) => shIn(cmd, work);

const startRunner = () => spawnHostRunner(daemon.url, runner, { home: work, flutterDir });

const pipeline = (body: Record<string, unknown>) => ci.createPipeline(body);
const build = (pipelineId: string) => ci.queueBuild(pipelineId, commit);
const waitFor = (buildId: string, predicate: (b: any) => boolean, timeoutMs = 20_000) => ci.waitForBuild(buildId, predicate, timeoutMs);

async function stream(buildId: string, lastEventId?: string): Promise<SseReader> {
  const { token } = (await http(daemon.url, "POST", `/v1/builds/${buildId}/stream-token`, { token: ci.owner })).body;
  return new SseReader(
    await fetch(`${daemon.url}/v1/builds/${buildId}/logs/stream?token=${token}`, { headers: lastEventId ? { "last-event-id": lastEventId } : {} }),
  );
}

beforeAll(async () => {
  commit = await commitRepository(repo, { "README.md": "# app\n", "lib/main.dart": "void main() {}\n" });
  // A flutter whose build prints Gradle's progress over a moment and writes an .apk.
  writeFlutterStandIn(flutterDir, [
    `echo "Running Gradle task 'assembleRelease'..."`,
    'for i in 1 2 3; do echo "gradle progress $i"; sleep 0.05; done',
    ...WRITE_APK,
    'echo "Built build/app/outputs/flutter-apk/app-release.apk"',
  ]);

  ci = await startGithubProject({
    daemon: { dataDir: join(work, "data"), cleanup: false, env: DAEMON_ENV },
    repository: { id: 77, full_name: "acme/app", clone_url: repo },
  });
  ({ daemon } = ci);
  runner = await ci.registerRunner({ name: "linux-e2e" });
  runnerProc = startRunner();
}, 60_000);

afterAll(async () => {
  runnerProc?.proc.kill("SIGKILL");
  await daemon?.stop();
  await ci?.host.stop();
  await sh("pkill -f 'sleep 3133[0-9]' || true").catch(() => {});
  rmSync(work, { recursive: true, force: true });
});

describe("a real runner", () => {
  test("checks out the exact commit, runs every step, and an SSE viewer sees every line live, once, across a reconnect", async () => {
    const id = await pipeline({
      execution_config: {
        env: [
          { key: "FLAVOR", value: "prod" },
          { key: "SIGNING_PASSWORD", value: "s3cr3t-signing-pass", secret: true },
        ],
        commands: {
          pre_build: ["echo pre-build for build $ROOST_BUILD_NUMBER at $ROOST_COMMIT_SHA", "sleep 1.5", "test -f lib/main.dart"],
          build: ["echo flavor $FLAVOR password $SIGNING_PASSWORD"],
          post_build: ["ls build/app/outputs/flutter-apk"],
        },
      },
    });
    const buildId = await build(id);
    const first = await stream(buildId);
    // Disconnect while the build still runs (pre_build sleeps), then resume from the last id seen.
    await first.until((e) => e.some((x) => x.event === "log" && x.data.includes("pre-build for build")), 30_000);
    const seen = first.logs();
    expect((await http(daemon.url, "GET", `/v1/builds/${buildId}`, { token: ci.owner })).body.build.status).toBe("running");
    await first.cancel();
    const second = await stream(buildId, String(seen[seen.length - 1]!.seq));
    await second.until((e) => e.some((x) => x.event === "end"), 30_000);
    const all = [...seen, ...second.logs()];
    expect(all.map((l) => l.seq)).toEqual(Array.from({ length: all.length }, (_, i) => i + 1));
    const text = all.map((l) => l.text).join("\n");
    expect(text).toContain(`checked out ${commit} (first commit)`);
    expect(text).toContain(`pre-build for build 1 at ${commit}`);
    expect(text).toContain("Flutter stand-in (tests): flutter build apk");
    expect(text).toContain("Built build/app/outputs/flutter-apk/app-release.apk");
    expect(text).toContain("flavor prod password ********");
    expect(text).not.toContain("s3cr3t-signing-pass");
    expect(text).toContain("app-release.apk");

    const done = await waitFor(buildId, (b) => b.status !== "running" && b.status !== "queued");
    expect(done).toMatchObject({ status: "succeeded", exit_code: 0, runner_id: runner.id });
    expect(done.step_results.map((s: { name: string; status: string }) => [s.name, s.status])).toEqual([
      ["checkout", "succeeded"],
      ["pre_build", "succeeded"],
      ["build_android", "succeeded"],
      ["build", "succeeded"],
      ["post_build", "succeeded"],
    ]);

    // The .apk the flutter stand-in wrote was uploaded, listed and downloads intact.
    const artifacts = (await http(daemon.url, "GET", `/v1/builds/${buildId}/artifacts`, { token: ci.owner })).body.artifacts;
    const expected = `fake apk for ${commit}`;
    const sha = new Bun.CryptoHasher("sha256").update(expected).digest("hex");
    expect(artifacts).toEqual([
      {
        id: expect.any(String),
        build_id: buildId,
        path: "build/app/outputs/flutter-apk/app-release.apk",
        size: expected.length,
        sha256: sha,
        created_at: expect.any(Number),
      },
    ]);
    const download = await fetch(`${daemon.url}/v1/builds/${buildId}/artifacts/${artifacts[0].id}`, { headers: { authorization: `Bearer ${ci.owner}` } });
    expect(download.headers.get("x-roost-artifact-sha256")).toBe(sha);
    expect(download.headers.get("content-disposition")).toBe('attachment; filename="app-release.apk"');
    expect(await download.text()).toBe(expected);
  }, 60_000);

  test("a failing step fails the build with its exit code; later steps are skipped", async () => {
    const buildId = await build(await pipeline({ execution_config: { commands: { build: ["echo about to fail", "exit 7"], post_build: ["echo never"] } } }));
    const done = await waitFor(buildId, isFinished, 30_000);
    expect(done).toMatchObject({ status: "failed", exit_code: 7, failure_reason: "step build failed with exit code 7" });
    expect(done.step_results.find((s: { name: string }) => s.name === "post_build").status).toBe("skipped");
    const log = await ci.buildLog(buildId);
    expect(log).toContain("about to fail");
    expect(log).not.toContain("never\n");
  }, 40_000);

  test("a pinned Flutter version the runner does not have fails the build clearly, before any build step runs", async () => {
    const buildId = await build(await pipeline({ execution_config: { flutter_version: "3.99.0", commands: { pre_build: ["echo should not run"] } } }));
    const done = await waitFor(buildId, isFinished, 30_000);
    expect(done.status).toBe("failed");
    // The runner installs a missing version from ROOST_FLUTTER_GIT_URL, which here has no Flutter.
    expect(done.failure_reason).toMatch(
      /^Flutter 3\.99\.0 could not be installed on this runner from file:\/\/\/nonexistent\/flutter.git \(step flutter_install failed with exit code \d+\)$/,
    );
    const log = await ci.buildLog(buildId);
    expect(log).not.toContain("should not run\n");
  }, 40_000);

  test("cancel mid-step stops the whole process tree and the build ends canceled", async () => {
    const buildId = await build(await pipeline({ execution_config: { commands: { build: ["(sleep 31337; echo child) & sleep 31336; echo parent"] } } }));
    await waitFor(buildId, (b) => b.step_results.some((s: { name: string; status: string }) => s.name === "build" && s.status === "running"), 30_000);
    await Bun.sleep(300);
    expect(await sh("pgrep -f 'sleep 3133[67]' | wc -l")).not.toBe("0");
    const canceled = await http(daemon.url, "POST", `/v1/builds/${buildId}/cancel`, { token: ci.owner });
    expect(canceled.body.build.status).toBe("canceled");
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && (await sh("pgrep -f 'sleep 3133[67]' | wc -l")) !== "0") await Bun.sleep(200);
    expect(await sh("pgrep -f 'sleep 3133[67]' | wc -l")).toBe("0");
    const after = await waitFor(
      buildId,
      (b) => b.step_results.some((s: { name: string; status: string }) => s.name === "build" && s.status === "canceled"),
      15_000,
    );
    expect(after.status).toBe("canceled");
  }, 40_000);

  test("the daemon restarted mid-build: the runner keeps its job, no acknowledged line is lost or doubled, the build completes", async () => {
    const buildId = await build(await pipeline({ execution_config: { commands: { build: ['for i in $(seq 1 80); do echo "count $i"; sleep 0.04; done'] } } }));
    await waitFor(buildId, (b) => b.step_results.some((s: { name: string; status: string }) => s.name === "build" && s.status === "running"), 30_000);
    await Bun.sleep(600);
    const listen = daemon.url.replace("http://", "");
    expect(await daemon.stop()).toBe(0);
    daemon = await startDaemon({ dataDir: join(work, "data"), cleanup: false, listen, env: DAEMON_ENV });
    const done = await waitFor(buildId, isFinished, 30_000);
    expect(done.status).toBe("succeeded");
    const log = await ci.buildLog(buildId);
    const counts = log.split("\n").filter((l) => l.startsWith("count "));
    expect(counts).toEqual(Array.from({ length: 80 }, (_, i) => `count ${i + 1}`));
  }, 60_000);

  test("a runner killed with SIGKILL mid-build: the build fails with the lost-runner reason within the lease, and an incident is raised", async () => {
    const buildId = await build(await pipeline({ execution_config: { commands: { build: ["sleep 31338"] } } }));
    await waitFor(buildId, (b) => b.step_results.some((s: { name: string; status: string }) => s.name === "build" && s.status === "running"), 30_000);
    const killedAt = Date.now();
    runnerProc!.proc.kill("SIGKILL");
    await runnerProc!.proc.exited;
    const failed = await waitFor(buildId, (b) => b.status === "failed", 30_000);
    // Within the lease (4 s from the last heartbeat) and a reaper period (half the lease: 2 s),
    // timed in whole seconds, with room for a loaded host (a 3 s margin left it about 2); a lost
    // runner still noticed only at the default lease's end (45 s) fails it.
    expect(Date.now() - killedAt).toBeLessThan(4000 + 2000 + 1000 + 5000);
    expect(failed).toMatchObject({ exit_code: -1 });
    expect(failed.failure_reason).toBe("runner_lost: runner linux-e2e sent no heartbeat for 4 s");
    const incidents = (await http(daemon.url, "GET", "/v1/operator-incidents?status=open", { token: ci.owner })).body.incidents;
    expect(incidents.some((i: { reason: string; resource_id: string }) => i.reason === "runner_lost" && i.resource_id === runner.id)).toBe(true);
    await sh("pkill -f 'sleep 3133[8]' || true");
    runnerProc = startRunner();
  }, 70_000);
});
