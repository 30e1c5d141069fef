// The runner program's own behaviour, as an operator sees it (docs/runners.md "Running a runner",
// "Stopping a runner"): its flags and ROOST_URL checked (exit 2), one line when Roost cannot be
// reached and one when it is back, SIGTERM handing back or canceling its job within about a
// second, an artifact the daemon refuses failing the build, and committed links that leave the
// workspace never uploaded. Real `roost runner` and
// `roost serve` processes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { freePort, http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { commitRepository, isFinished, sh as shIn, spawnRunner, startGithubProject, type GithubProject } from "../helpers/ci-daemon.ts";

const work = mkdtempSync(join(tmpdir(), "roost-runner-behaviour-"));
const repo = join(work, "app");
let ci: GithubProject;
let daemon: Daemon;
let commit = "";
const running: Subprocess[] = [];

const sh = (cmd: string, cwd = work) => shIn(cmd, cwd);
/**
 * How soon a runner must exit after SIGTERM. About a second on an idle host (a build's process
 * tree gets STOPPING_GRACE_MS, 1 s, then KILL, and its finish is sent); the 2-2.5 s bounds left a
 * loaded host a second at most beyond that. 5 s still tells a prompt stop from one that waits: the
 * 10 s grace (ROOST_RUNNER_GRACE_SECONDS here), a claim's 20 s long poll, a stand-in holding its answer.
 */
const STOPS_WITHIN_MS = 5000;

/** A `roost runner` process whose stderr lines are collected as they come. */
function startRunner(env: Record<string, string>, args: string[] = ["--unsafe-allow-same-user"]) {
  const { proc, lines, done } = spawnRunner(args, {
    HOME: work,
    ROOST_RUNNER_WORKDIR: join(work, `runner-work-${crypto.randomUUID().slice(0, 6)}`),
    ROOST_RUNNER_GRACE_SECONDS: "10",
    ...env,
  });
  running.push(proc);
  const msgs = () => lines.map((l) => (l.startsWith("{") ? String(JSON.parse(l).msg) : l));
  return {
    proc,
    lines,
    msgs,
    async until(predicate: (msgs: string[]) => boolean, timeoutMs = 15_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(msgs())) {
        if (Date.now() > deadline) throw new Error(`runner did not get there; stderr: ${lines.join("\n")}`);
        await Bun.sleep(50);
      }
    },
    async exit(): Promise<{ code: number; stderr: string }> {
      const code = await proc.exited;
      await done;
      return { code, stderr: lines.join("\n") };
    },
  };
}

/** A runner that keeps failing to reach Roost is past its first attempts (the backoff between them is seconds now); SIGTERM stops it within STOPS_WITHIN_MS, exit 0, its last line "runner stopped". */
async function expectStopsMidBackoff(r: ReturnType<typeof startRunner>): Promise<void> {
  await r.until((m) => m.some((x) => x.startsWith("cannot reach Roost")));
  await Bun.sleep(2500);
  const t0 = Date.now();
  r.proc.kill("SIGTERM");
  const { code } = await r.exit();
  expect({ code, last: r.msgs().at(-1) }).toEqual({ code: 0, last: "runner stopped" });
  expect(Date.now() - t0).toBeLessThan(STOPS_WITHIN_MS);
}

async function registerRunner(): Promise<Record<string, string>> {
  const created = await ci.registerRunner();
  return { ROOST_URL: daemon.url, ROOST_RUNNER_ID: created.id, ROOST_RUNNER_TOKEN: created.token };
}

async function queueBuild(executionConfig: Record<string, unknown>, commitSha = commit): Promise<string> {
  return ci.queueBuild(await ci.createPipeline({ execution_config: executionConfig }), commitSha);
}

const waitFor = (buildId: string, predicate: (b: any) => boolean, timeoutMs = 20_000) => ci.waitForBuild(buildId, predicate, timeoutMs);
const finished = isFinished;

beforeAll(async () => {
  mkdirSync(repo, { recursive: true });
  writeFileSync(join(repo, "README.md"), "# app\n");
  commit = await commitRepository(repo);
  ci = await startGithubProject({
    daemon: { dataDir: join(work, "data"), cleanup: false, env: { ROOST_MAX_ARTIFACT_BYTES: "1024", ROOST_RUNNER_HEARTBEAT_SECONDS: "1" } },
    repository: { id: 78, full_name: "acme/app", clone_url: repo },
  });
  ({ daemon } = ci);
}, 60_000);

afterAll(async () => {
  for (const p of running) p.kill("SIGKILL");
  await ci?.stop();
  await sh("pkill -f 'sleep 3134[0-9]' || true").catch(() => {});
  rmSync(work, { recursive: true, force: true });
});

describe("configuration", () => {
  test.each([["ftp://ci.example.test"], ["not a url"], ["http://ci.example.test/?x=1"]])("ROOST_URL=%p: exit 2 with one line saying so", async (url) => {
    const r = startRunner({ ROOST_URL: url, ROOST_RUNNER_ID: "r", ROOST_RUNNER_TOKEN: "t" });
    const { code, stderr } = await r.exit();
    expect(code).toBe(2);
    expect(stderr.trim()).toBe(`roost runner: ROOST_URL is not an http:// or https:// URL: ${JSON.stringify(url)} (see roost runner --help)`);
  });

  test("an unknown flag: exit 2 with one line naming it", async () => {
    const r = startRunner({ ROOST_RUNNER_ID: "r", ROOST_RUNNER_TOKEN: "t" }, ["--unsafe-allow-same-usr"]);
    const { code, stderr } = await r.exit();
    expect(code).toBe(2);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toContain("'--unsafe-allow-same-usr'");
  });
});

describe("the build's environment", () => {
  test("build steps get the toolchain variables set on the runner host and the --env names, never the runner's token", async () => {
    const env = await registerRunner();
    const r = startRunner(
      {
        ...env,
        ANDROID_HOME: "/opt/android-sdk",
        ANDROID_SDK_ROOT: "/opt/android-sdk",
        JAVA_HOME: "/usr/lib/jvm/java-17",
        PUB_HOSTED_URL: "https://pub.example.test",
        https_proxy: "http://ci:proxy-pass-31337@proxy.example.test:3128",
        no_proxy: "127.0.0.1,localhost",
        MY_TOOL_HOME: "/opt/my-tool",
        ANOTHER_TOOL: "/opt/another",
        NOT_PASSED: "host only",
        ROOST_RUNNER_ENV: "ANOTHER_TOOL",
      },
      ["--unsafe-allow-same-user", "--env", "MY_TOOL_HOME"],
    );
    await r.until((m) => m.includes("runner connected"));
    // A check pipeline (platforms: []): its commands and no platform build.
    const buildId = await queueBuild({
      platforms: [],
      commands: {
        build: [
          'for v in ANDROID_HOME ANDROID_SDK_ROOT JAVA_HOME PUB_HOSTED_URL https_proxy no_proxy MY_TOOL_HOME ANOTHER_TOOL NOT_PASSED ROOST_RUNNER_TOKEN ROOST_RUNNER_ID ROOST_URL; do echo "$v=${!v-unset}"; done',
        ],
      },
    });
    const build = await waitFor(buildId, finished, 30_000);
    expect(build.status).toBe("succeeded");
    expect(build.step_results.map((s: { name: string }) => s.name)).toEqual(["checkout", "build"]);
    const log = await ci.buildLog(buildId);
    const seen = log.split("\n").filter((l) => /^[A-Za-z_]+=/.test(l));
    expect(seen).toEqual([
      "ANDROID_HOME=/opt/android-sdk",
      "ANDROID_SDK_ROOT=/opt/android-sdk",
      "JAVA_HOME=/usr/lib/jvm/java-17",
      "PUB_HOSTED_URL=https://pub.example.test",
      // A proxy's password is masked in the log like a secret.
      "https_proxy=http://ci:********@proxy.example.test:3128",
      "no_proxy=127.0.0.1,localhost",
      "MY_TOOL_HOME=/opt/my-tool",
      "ANOTHER_TOOL=/opt/another",
      "NOT_PASSED=unset",
      "ROOST_RUNNER_TOKEN=unset",
      "ROOST_RUNNER_ID=unset",
      "ROOST_URL=unset",
    ]);
    r.proc.kill("SIGTERM");
    expect((await r.exit()).code).toBe(0);
  }, 40_000);

  test.each([["ROOST_RUNNER_TOKEN"], ["not-a-name"]])("--env %p: exit 2 with one line saying why", async (name) => {
    const r = startRunner({ ROOST_RUNNER_ID: "r", ROOST_RUNNER_TOKEN: "roost_rt_x" }, ["--env", name]);
    const { code, stderr } = await r.exit();
    expect(code).toBe(2);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toStartWith(
      `roost runner: cannot pass ${name.startsWith("ROOST") ? name : JSON.stringify(name)} to build steps (--env, ROOST_RUNNER_ENV): `,
    );
  });
});

describe("an unreachable Roost", () => {
  test("the runner says once that it cannot reach Roost, keeps retrying, and says once when Roost is back", async () => {
    const env = await registerRunner();
    const port = freePort();
    const r = startRunner({ ...env, ROOST_URL: `http://127.0.0.1:${port}` });
    await r.until((m) => m.some((x) => x.startsWith("cannot reach Roost")));
    // Several attempts fail meanwhile (backoff from 200 ms); still a single line.
    await Bun.sleep(2500);
    expect(r.msgs().filter((x) => x.startsWith("cannot reach Roost"))).toEqual([
      `cannot reach Roost at http://127.0.0.1:${port}; retrying with backoff (up to 10 s between attempts)`,
    ]);
    // Roost comes up on that address: the runner connects.
    const second = await startDaemon({ dataDir: join(work, "data"), cleanup: false, listen: `127.0.0.1:${port}` });
    try {
      await r.until((m) => m.includes("runner connected"), 20_000);
      const back = r.lines.map((l) => JSON.parse(l)).find((l) => l.msg === `reached Roost again at http://127.0.0.1:${port}`);
      expect(typeof back.unreachable_seconds).toBe("number");
      expect(back.failed_attempts).toBeGreaterThan(2);
      expect(r.msgs().filter((x) => x.startsWith("cannot reach Roost") || x.startsWith("reached Roost again"))).toHaveLength(2);
      r.proc.kill("SIGTERM");
      expect((await r.exit()).code).toBe(0);
    } finally {
      await second.stop();
    }
  }, 60_000);
});

describe("SIGTERM", () => {
  test("an idle runner stops within a second or two", async () => {
    const r = startRunner(await registerRunner());
    await r.until((m) => m.includes("runner connected"));
    await Bun.sleep(300);
    const t0 = Date.now();
    r.proc.kill("SIGTERM");
    expect((await r.exit()).code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(STOPS_WITHIN_MS);
  }, 30_000);

  test("a runner that has never reached Roost stops within a second or two, mid-backoff, and says runner stopped", async () => {
    const r = startRunner({ ROOST_URL: `http://127.0.0.1:${freePort()}`, ROOST_RUNNER_ID: "r", ROOST_RUNNER_TOKEN: "roost_rt_x" });
    await expectStopsMidBackoff(r);
  }, 30_000);

  test("a connected runner that lost Roost stops within a second or two, mid-backoff, and says runner stopped", async () => {
    // A stand-in for the protocol that connects the runner, holds its claim, then goes away.
    let held = false;
    const stub = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const path = new URL(req.url).pathname.replace(/^\/v1\/runners\/r1/, "");
        if (path === "/connect") return Response.json({ heartbeat_seconds: 10, lease_seconds: 45, max_log_request_bytes: 1048576 });
        held = true;
        await new Promise<void>((resolve) => req.signal.addEventListener("abort", () => resolve()));
        return new Response(null, { status: 204 });
      },
    });
    const r = startRunner({ ROOST_URL: `http://127.0.0.1:${stub.port}`, ROOST_RUNNER_ID: "r1", ROOST_RUNNER_TOKEN: "roost_rt_x" });
    await r.until((m) => m.includes("runner connected"));
    while (!held) await Bun.sleep(20);
    stub.stop(true);
    await expectStopsMidBackoff(r);
  }, 30_000);

  test("a running build is canceled and finished as canceled, its process tree stopped, within a second or two", async () => {
    const r = startRunner(await registerRunner());
    await r.until((m) => m.includes("runner connected"));
    const buildId = await queueBuild({ platform_commands: { android: "true" }, commands: { build: ["(trap '' TERM; sleep 31341) & sleep 31340"] } });
    await waitFor(buildId, (b) => b.step_results.some((s: { name: string; status: string }) => s.name === "build" && s.status === "running"), 30_000);
    await Bun.sleep(300);
    const t0 = Date.now();
    r.proc.kill("SIGTERM");
    expect((await r.exit()).code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(STOPS_WITHIN_MS);
    const build = (await http(daemon.url, "GET", `/v1/builds/${buildId}`, { token: ci.owner })).body.build;
    expect(build).toMatchObject({ status: "canceled", failure_reason: "the runner was stopped (SIGTERM) while the build ran" });
    expect(build.step_results.find((s: { name: string }) => s.name === "build").status).toBe("canceled");
    expect(await sh("pgrep -f 'sleep 3134[01]' | wc -l")).toBe("0");
    const log = await ci.buildLog(buildId);
    expect(log).toContain("[roost] the runner is stopping: the build was canceled and its process tree stopped");
  }, 40_000);

  test("a job the daemon hands out as the runner stops is handed back, not run", async () => {
    // Which comes first, a job or the signal, cannot be arranged with a real daemon; a stand-in
    // for the protocol holds the claim open until the runner gives up on it, then answers the
    // runner's retry of that same claim_id with a job, as the daemon would had it claimed one.
    const calls: string[] = [];
    const claimIds: string[] = [];
    let held: (() => void) | null = null;
    const stub = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const path = new URL(req.url).pathname.replace(/^\/v1\/runners\/r1/, "");
        calls.push(`${req.method} ${path}`);
        if (path === "/connect") return Response.json({ heartbeat_seconds: 10, lease_seconds: 45, max_log_request_bytes: 1048576 });
        if (path === "/jobs/release" || path.endsWith("/release")) return Response.json({ released: true, build_status: "queued" });
        if (path === "/jobs/claim") {
          const body = (await req.json()) as { claim_id: string; wait_seconds: number };
          claimIds.push(body.claim_id);
          if (body.wait_seconds > 0) {
            await new Promise<void>((resolve) => ((held = resolve), req.signal.addEventListener("abort", () => resolve())));
            return new Response(null, { status: 204 });
          }
          return Response.json({ job: stubJob }, { status: 201 });
        }
        return Response.json({ code: "not_found", message: "no" }, { status: 404 });
      },
    });
    try {
      const r = startRunner({ ROOST_URL: `http://127.0.0.1:${stub.port}`, ROOST_RUNNER_ID: "r1", ROOST_RUNNER_TOKEN: "roost_rt_x" });
      await r.until((m) => m.includes("runner connected"));
      while (!held) await Bun.sleep(20);
      const t0 = Date.now();
      r.proc.kill("SIGTERM");
      const { code } = await r.exit();
      expect(code).toBe(0);
      expect(Date.now() - t0).toBeLessThan(STOPS_WITHIN_MS);
      expect(calls).toEqual(["POST /connect", "POST /jobs/claim", "POST /jobs/claim", "POST /jobs/job-1/release"]);
      expect(claimIds[1]).toBe(claimIds[0]!);
      expect(r.msgs()).toContain("job handed back: the runner is stopping");
    } finally {
      stub.stop(true);
    }
  }, 30_000);
});

const stubJob = {
  job_id: "job-1",
  lease_seconds: 45,
  heartbeat_seconds: 10,
  next_line: 0,
  build: {
    id: "b1",
    build_number: 1,
    project_id: "p1",
    pipeline_id: "pl1",
    branch: "main",
    commit_sha: "a".repeat(40),
    trigger_type: "manual",
    trigger_event: "push",
    trigger_ref: "",
    repository_full_name: "acme/app",
    clone_url: "/nonexistent",
  },
  clone_credentials: null,
  config: {
    pipeline_name: "p",
    execution_config: {
      artifact_patterns: [],
      commands: { pre_build: [], build: ["echo must not run"], post_build: [] },
      env: [],
      flutter_version: "stable",
      platform_build_args: {},
      platform_commands: {},
      platforms: ["android"],
    },
  },
};

describe("artifacts", () => {
  test("an artifact the daemon refuses fails the build, saying which file and why", async () => {
    const r = startRunner(await registerRunner());
    await r.until((m) => m.includes("runner connected"));
    const buildId = await queueBuild({
      platform_commands: { android: "true" },
      artifact_patterns: ["out/*.apk"],
      commands: { build: ["mkdir -p out && head -c 4096 /dev/zero > out/app.apk"] },
    });
    const build = await waitFor(buildId, finished, 30_000);
    expect(build).toMatchObject({ status: "failed", exit_code: 1 });
    expect(build.failure_reason).toMatch(/^artifact out\/app\.apk was refused by Roost: 413 payload_too_large: /);
    expect((await http(daemon.url, "GET", `/v1/builds/${buildId}/artifacts`, { token: ci.owner })).body.artifacts).toEqual([]);
    r.proc.kill("SIGTERM");
    await r.exit();
  }, 40_000);

  test("committed links that leave the workspace are skipped with a line each; only files inside it are uploaded", async () => {
    const outside = join(work, "outside-secret.txt");
    await Bun.write(outside, "a file of the runner's host, outside the workspace\n");
    // Links as an attacker would commit them: to /etc/passwd, to an absolute path on the runner,
    // climbing out with .., and a directory link a wildcard runs through; one link stays inside.
    await sh(
      [
        "mkdir -p out && printf 'apk bytes' > out/real.apk",
        "ln -s /etc/passwd out/passwd.apk",
        `ln -s ${outside} out/outside.apk`,
        "ln -s ../../../../outside-secret.txt out/climb.apk",
        `ln -s ${work} linked`,
        "ln -s real.apk out/inside.apk",
        "git add -A && git -c user.email=ci@example.test -c user.name=CI commit -q -m 'links'",
      ].join(" && "),
      repo,
    );
    const withLinks = await sh("git rev-parse HEAD", repo);
    const r = startRunner(await registerRunner());
    await r.until((m) => m.includes("runner connected"));
    const patterns = ["out/passwd.apk", "out/outside.apk", "out/climb.apk", "linked/*.txt", "out/inside.apk", "out/real.apk"];
    const buildId = await queueBuild({ platform_commands: { android: "true" }, artifact_patterns: patterns }, withLinks);
    const build = await waitFor(buildId, finished, 30_000);
    expect(build).toMatchObject({ status: "succeeded", exit_code: 0 });
    const artifacts = (await http(daemon.url, "GET", `/v1/builds/${buildId}/artifacts`, { token: ci.owner })).body.artifacts;
    expect(artifacts.map((a: { path: string; size: number }) => [a.path, a.size])).toEqual([
      ["out/inside.apk", 9],
      ["out/real.apk", 9],
    ]);
    const log = await ci.buildLog(buildId);
    for (const path of ["out/passwd.apk", "out/outside.apk", "out/climb.apk", "linked/outside-secret.txt"]) {
      expect(log).toContain(
        `[roost] skipped ${path}: it is outside the workspace (a link or a path that leaves it); only files inside the workspace are uploaded`,
      );
    }
    expect(log).not.toContain("root:x:0:0");
    r.proc.kill("SIGTERM");
    await r.exit();
  }, 40_000);
});
