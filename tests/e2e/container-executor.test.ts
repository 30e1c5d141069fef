// The container executor with a real engine (docs/runners.md "Executors"): a real daemon, a real
// `roost runner --executor container --engine podman` process, and Podman running each build in
// a fresh container of an image built here without a registry (scripts/ensure-test-image: a
// debootstrap'd Debian 12 with the flutter stand-in, scripts/flutter-stand-in, in it). The runner
// runs as root on the daemon's host, as a careless operator would: what the build's code can see
// and reach from its container is the behaviour under test.
//
// A machine where Podman cannot run a container fails these tests, saying why; none is skipped.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, createServer } from "node:net";
import type { Subprocess } from "bun";
import { BUN, REPO_ROOT, ROOST, http, type Daemon } from "../helpers/daemon.ts";
import { sh as shIn } from "../helpers/ci-daemon.ts";
import { pollUntil } from "../helpers/poll.ts";
import { GREETING_SERVER, TEST_CACHE_DIR, ensureTestImage, startContainerWorld, type ContainerWorld } from "../helpers/containers.ts";
import { startRegistry, type TestRegistry } from "../support/registry.ts";

const work = mkdtempSync(join(tmpdir(), "roost-container-e2e-"));
let ci: ContainerWorld;
let image = "";
let daemon: Daemon;
let commit = "";
const sh = (cmd: string) => shIn(cmd, work);

/** The ids of the build's containers (any state), found by the label the runner gives them. */
async function containersOf(buildId: string): Promise<string[]> {
  return (await sh(`podman ps --all --no-trunc --filter label=roost.build=${buildId} --format '{{.ID}}'`)).split("\n").filter(Boolean);
}

/** Waits until the build's container runs a process of its step; its container id. */
async function runningContainer(buildId: string, process: string): Promise<string> {
  const top = async () => {
    const [id] = await containersOf(buildId);
    return id && (await sh(`podman top ${id} args 2>/dev/null || true`)).includes(process) ? id : "";
  };
  return pollUntil(`a container of build ${buildId} running ${process}`, top, (id) => id !== "", 60_000, 200);
}

/** What is left of a build's container: containers, mounts naming it, its workspace and cache homes on the host. */
async function leftovers(
  buildId: string,
  containerId: string,
  runnerWorkDir: string,
): Promise<{ containers: string[]; mounts: string[]; workspaces: string[] }> {
  const mounts = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter((l) => l.includes(containerId));
  const workspaces = ["jobs", "homes"].flatMap((d) => (existsSync(join(runnerWorkDir, d)) ? readdirSync(join(runnerWorkDir, d)).map((j) => `${d}/${j}`) : []));
  return { containers: await containersOf(buildId), mounts, workspaces };
}

const NOTHING_LEFT = { containers: [], mounts: [], workspaces: [] };

/** Polls until nothing of the build's container is left (or gives up and answers what is). */
async function nothingLeft(buildId: string, containerId: string, runnerWorkDir: string) {
  const nothing = (left: unknown) => JSON.stringify(left) === JSON.stringify(NOTHING_LEFT);
  return pollUntil("nothing left", () => leftovers(buildId, containerId, runnerWorkDir), nothing, 30_000, 300).catch(() =>
    leftovers(buildId, containerId, runnerWorkDir),
  );
}

const stepStatuses = (build: { step_results: { name: string; status: string }[] }) => build.step_results.map((s) => [s.name, s.status]);

beforeAll(async () => {
  // The engine and the image, or a failure that says what is missing (never a skip).
  image = ensureTestImage();
  const probe = Bun.spawnSync(["podman", "run", "--rm", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", image, "true"], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, CONTAINERS_CONF: join(TEST_CACHE_DIR, "containers.conf") },
  });
  if (probe.exitCode !== 0) throw new Error(`Podman cannot run a container on this machine: ${probe.stderr.toString().trim()}`);
  ci = await startContainerWorld({
    work,
    engine: "podman",
    image,
    repositoryId: 79,
    env: { CONTAINERS_CONF: join(TEST_CACHE_DIR, "containers.conf") },
    timeoutMs: 90_000,
  });
  ({ daemon, commit } = ci);
}, 600_000);

afterEach(() => ci.stopRunners());

afterAll(async () => {
  await ci?.stop();
  await sh("podman ps --all --filter label=roost.runner --format '{{.ID}}' | xargs -r podman rm --force --time 0 >/dev/null").catch(() => {});
  rmSync(work, { recursive: true, force: true });
});

describe("configuration", () => {
  /** `roost runner <args>` with a registration but no daemon to reach: its exit code and stderr. */
  async function runnerRefusal(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stderr: string }> {
    const p = Bun.spawn([BUN, ROOST, "runner", ...args], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: work, ROOST_RUNNER_ID: "r", ROOST_RUNNER_TOKEN: "t", ...env },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    return { code, stderr };
  }

  test.each([
    [["--executor", "vm"], 'roost runner: --executor is host or container, not "vm" (see roost runner --help)'],
    [["--image", "x"], "roost runner: --image is for --executor container (see roost runner --help)"],
    [["--executor", "container", "--engine", "lxc"], 'roost runner: --engine is podman or docker, not "lxc" (see roost runner --help)'],
    [["--executor", "container", "--memory", "lots"], 'roost runner: --memory is not a size like 512m or 4g: "lots" (see roost runner --help)'],
    [
      ["--executor", "container", "--container-user", "0:0"],
      'roost runner: --container-user is UID:GID of a user other than root, not "0:0" (see roost runner --help)',
    ],
  ])("%p: exit 2 with one line saying what is wrong", async (args, message) => {
    const { code, stderr } = await runnerRefusal(args);
    expect({ code, stderr: stderr.trim() }).toEqual({ code: 2, stderr: message });
  });

  test("an engine that does not answer: exit 2 naming it (this machine's docker CLI has no daemon)", async () => {
    const { code, stderr } = await runnerRefusal(["--executor", "container", "--engine", "docker"], { DOCKER_HOST: `unix://${work}/no-docker.sock` });
    expect(code).toBe(2);
    expect(stderr).toStartWith("roost runner: docker info failed: ");
  });
});

describe("a build in a fresh container", () => {
  test("--once: the runner runs one build and stops (exit 0); the next build waits for another runner", async () => {
    const runner = await ci.startRunner({ args: ["--once"] });
    const id = await ci.pipeline({ platforms: [], commands: { build: ["echo one build"] } });
    const first = await ci.build(id);
    expect(await runner.proc.exited).toBe(0);
    expect((await ci.waitFor(first)).status).toBe("succeeded");
    expect(runner.lines.at(-1)).toContain("runner stopped");
    const second = await ci.build(id);
    await Bun.sleep(1000);
    expect((await http(daemon.url, "GET", `/v1/builds/${second}`, { token: ci.owner })).body.build.status).toBe("queued");
    await http(daemon.url, "POST", `/v1/builds/${second}/cancel`, { token: ci.owner });
  }, 120_000);

  test("succeeds with the image's flutter: its log (secrets masked), its artifact, and a second build restoring the first one's cache", async () => {
    await ci.startRunner();
    const id = await ci.pipeline({
      env: [{ key: "SIGNING_PASSWORD", value: "s3cr3t-signing-pass", secret: true }],
      commands: { pre_build: ["flutter pub get", "id -u", "echo password $SIGNING_PASSWORD"], build: ["echo workspace $PWD home $HOME pub $PUB_CACHE"] },
    });
    const first = await ci.waitFor(await ci.build(id));
    const text = await ci.buildLog(first.id);
    expect(first).toMatchObject({ status: "succeeded", exit_code: 0 });
    expect(text).toContain("[roost] container: podman");
    expect(text).toContain(`image ${image}`);
    expect(text).toContain("flutter stand-in: packages of pubspec.lock: downloading (simulated, 0 s)...");
    expect(text).toContain("\n1000\n");
    expect(text).toContain("password ********");
    expect(text).not.toContain("s3cr3t-signing-pass");
    expect(text).toContain("workspace /roost/workspace home /roost/homes/home pub /roost/homes/PUB_CACHE");
    expect(text).toContain("[roost] cache: saved");
    expect(stepStatuses(first)).toEqual([
      ["checkout", "succeeded"],
      ["container", "succeeded"],
      ["pre_build", "succeeded"],
      ["build_android", "succeeded"],
      ["build", "succeeded"],
    ]);
    const artifacts = (await http(daemon.url, "GET", `/v1/builds/${first.id}/artifacts`, { token: ci.owner })).body.artifacts;
    expect(artifacts.map((a: { path: string }) => a.path)).toEqual(["build/app/outputs/flutter-apk/app-release.apk"]);
    const apk = await fetch(`${daemon.url}/v1/builds/${first.id}/artifacts/${artifacts[0].id}`, { headers: { authorization: `Bearer ${ci.owner}` } }).then(
      (r) => r.text(),
    );
    expect(apk).toBe(`placeholder apk written by scripts/flutter-stand-in for commit ${commit}; not an app\n`);

    const second = await ci.waitFor(await ci.build(id));
    const again = await ci.buildLog(second.id);
    expect(second.status).toBe("succeeded");
    expect(again).toContain("[roost] cache: restored");
    expect(again).toContain("flutter stand-in: packages of pubspec.lock: already in /roost/homes/PUB_CACHE/");
  }, 180_000);
});

describe("Flutter in the container", () => {
  test("a pinned version is the runner's SDK, mounted: it runs, writes its caches in the container, and the runner's copy stays as it was", async () => {
    const sdks = join(work, "sdks");
    mkdirSync(join(sdks, "3.27.1", "bin"), { recursive: true });
    writeFileSync(
      join(sdks, "3.27.1", "bin", "flutter"),
      '#!/bin/sh\necho "runner SDK 3.27.1: $0 $*"\nmkdir -p "$(dirname "$0")/cache" && date > "$(dirname "$0")/cache/stamp" && echo "cache written"\n',
      { mode: 0o755 },
    );
    const runner = await ci.startRunner({ env: { ROOST_FLUTTER_SDKS: sdks } });
    const id = await ci.build(await ci.pipeline({ platforms: [], flutter_version: "3.27.1", commands: { build: ["flutter --version"] } }));
    const done = await ci.waitFor(id);
    const text = await ci.buildLog(id);
    expect(done.status).toBe("succeeded");
    expect(done.flutter_sdk).toMatchObject({ requested: "3.27.1", source: "sdks_dir" });
    expect(text).toContain(
      `[roost] Flutter 3.27.1 (the pipeline's flutter_version): ${join(sdks, "3.27.1")} (mounted in the build's container at /opt/roost/flutter)`,
    );
    expect(text).toContain("runner SDK 3.27.1: /opt/roost/flutter/bin/flutter --version\ncache written\n");
    expect(existsSync(join(sdks, "3.27.1", "bin", "cache"))).toBe(false);
    expect(readdirSync(join(runner.workDir, "overlays"))).toEqual([]);
  }, 120_000);
});

describe("what a build's code can reach from its container", () => {
  test("not the runner's home, another job's workspace, the cache store, the runner's token or the daemon's data dir; it writes only in its workspace", async () => {
    const runnerHome = join(work, "runner-home");
    mkdirSync(runnerHome, { recursive: true });
    writeFileSync(join(runnerHome, "secret.txt"), "the runner's own file\n");
    // Another runner's build, running meanwhile, with a file in its workspace.
    const other = await ci.startRunner();
    const otherBuild = await ci.build(await ci.pipeline({ platforms: [], commands: { build: ["echo other-job-file > other-secret.txt && sleep 3147"] } }));
    await runningContainer(otherBuild, "sleep 3147");
    const otherFile = join(other.workDir, "jobs", readdirSync(join(other.workDir, "jobs"))[0]!, "other-secret.txt");
    expect(readFileSync(otherFile, "utf8")).toBe("other-job-file\n");

    const runner = await ci.startRunner();
    // A cache entry in this runner's store, from a first build.
    await ci.waitFor(await ci.build(await ci.pipeline({ platforms: [], commands: { build: ["flutter pub get"] } })));
    expect(readdirSync(join(runner.workDir, "caches")).length).toBe(1);
    const probes: [string, string][] = [
      ["runner_home", `cat ${join(runnerHome, "secret.txt")}`],
      ["other_workspace", `cat ${otherFile}`],
      ["cache_store", `ls ${join(runner.workDir, "caches")}`],
      ["runner_work_dir", `ls ${runner.workDir}`],
      ["daemon_data_dir", `ls ${daemon.dataDir}`],
      ["daemon_database", `test -e ${join(daemon.dataDir, "roost.db")}`],
      ["runner_token_in_env", "env | grep -q ROOST_RUNNER"],
      ["runner_token_in_processes", "cat /proc/[0-9]*/environ | tr '\\0' '\\n' | grep -q ROOST_RUNNER"],
      ["write_root", "touch /escaped"],
      ["write_host_dir", `touch ${join(work, "escaped")}`],
      ["write_etc", "echo x >> /etc/passwd"],
      ["write_workspace", "echo inside > inside.txt"],
    ];
    const id = await ci.build(
      await ci.pipeline({
        platforms: [],
        artifact_patterns: ["inside.txt"],
        commands: {
          build: [
            ...probes.map(([name, cmd]) => `if (${cmd}) >/dev/null 2>&1; then echo "PROBE ${name} reached"; else echo "PROBE ${name} blocked"; fi`),
            "cat /proc/[0-9]*/environ | tr '\\0' '\\n' | sort -u",
          ],
        },
      }),
    );
    const done = await ci.waitFor(id);
    expect(done.status).toBe("succeeded");
    const text = await ci.buildLog(id);
    const results = Object.fromEntries([...text.matchAll(/^PROBE (\w+) (reached|blocked)$/gm)].map((m) => [m[1], m[2]]));
    expect(results).toEqual({
      runner_home: "blocked",
      other_workspace: "blocked",
      cache_store: "blocked",
      runner_work_dir: "blocked",
      daemon_data_dir: "blocked",
      daemon_database: "blocked",
      runner_token_in_env: "blocked",
      runner_token_in_processes: "blocked",
      write_root: "blocked",
      write_host_dir: "blocked",
      write_etc: "blocked",
      write_workspace: "reached",
    });
    // Every process's environment in the container, printed: not the runner's token.
    expect(text).not.toContain(runner.token);
    expect(text).toContain("ROOST_BUILD_ID=");
    expect(existsSync(join(work, "escaped"))).toBe(false);
    const artifacts = (await http(daemon.url, "GET", `/v1/builds/${id}/artifacts`, { token: ci.owner })).body.artifacts;
    expect(artifacts.map((a: { path: string }) => a.path)).toEqual(["inside.txt"]);
    await http(daemon.url, "POST", `/v1/builds/${otherBuild}/cancel`, { token: ci.owner });
  }, 180_000);
});

describe("the network of a build's container", () => {
  // A network namespace stands for the runner's host (tests/support/netns-host.ts): the daemon at
  // 127.0.0.1:<port> and a metadata stand-in at 169.254.169.254:80 there, the runner and Podman
  // started in it with nsenter. Everything of the namespace goes in afterAll.
  const netns = `rct-${crypto.randomUUID().slice(0, 8)}`;
  const inNetns = ["nsenter", `--net=/run/netns/${netns}`];
  let bridge: ReturnType<typeof createServer> | null = null;
  let hostSide: Subprocess | null = null;
  let port = 0;

  beforeAll(async () => {
    await sh(`ip netns add ${netns} && ip -n ${netns} link set lo up && ip -n ${netns} addr add 169.254.169.254/32 dev lo`);
    port = Number(new URL(daemon.url).port);
    const socketPath = join(work, "daemon.sock");
    bridge = createServer((client) => {
      const upstream = connect(port, "127.0.0.1");
      client.pipe(upstream).pipe(client);
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
    }).listen(socketPath);
    hostSide = Bun.spawn([...inNetns, BUN, join(REPO_ROOT, "tests/support/netns-host.ts"), String(port), socketPath], { stdout: "pipe", stderr: "inherit" });
    const reader = (hostSide.stdout as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("ready\n");
  }, 60_000);

  afterAll(async () => {
    hostSide?.kill("SIGKILL");
    bridge?.close();
    await sh(`ip netns del ${netns}`).catch(() => {});
  });

  /** bash's /dev/tcp: "reached" (and the first line answered), or "blocked" with the error. */
  const probe = (name: string, address: string, port: number) =>
    `r=$(timeout 5 bash -c 'exec 3<>/dev/tcp/${address}/${port} && printf "GET / HTTP/1.0\\r\\n\\r\\n" >&3 && head -1 <&3' 2>&1); if [ $? = 0 ]; then echo "PROBE ${name} reached: $r"; else echo "PROBE ${name} blocked: $(echo "$r" | tail -1)"; fi`;

  function probes(text: string): Record<string, string> {
    // "blocked: bash: line 1: /dev/tcp/169.254.169.254/80: No route to host" → "blocked: No route to host"
    return Object.fromEntries(
      [...text.matchAll(/^PROBE (\w+) (reached|blocked): ?(.*)$/gm)].map((m) => [m[1], `${m[2]}: ${m[2] === "blocked" ? m[3]!.split(": ").at(-1) : m[3]}`]),
    );
  }

  test("from the runner's host both are there; a container of the engine's own reaches them without Roost's routes and loopback flag", async () => {
    expect(await sh(`${inNetns.join(" ")} curl -s http://169.254.169.254/`)).toBe("metadata stand-in: AccessKeyId=ASIASTANDIN");
    expect(await sh(`${inNetns.join(" ")} curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:${port}/v1/setup/status`)).toMatch(/^[2-4]\d\d$/);
    const plain = await sh(
      `${inNetns.join(" ")} podman run --rm --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --network slirp4netns:allow_host_loopback=true ${image} bash -c '${[probe("metadata", "169.254.169.254", 80), probe("host_loopback", "10.0.2.2", port)].join("; ").replace(/'/g, "'\\''")}'`,
    );
    expect(probes(plain)).toEqual({ metadata: "reached: HTTP/1.1 200 OK", host_loopback: expect.stringMatching(/^reached: HTTP\/1.1 \d{3}/) });
  }, 120_000);

  test("a build reaches neither the daemon on the runner's loopback nor 169.254.169.254", async () => {
    await ci.startRunner({ via: { prefix: inNetns, url: `http://127.0.0.1:${port}` } });
    const id = await ci.build(
      await ci.pipeline({
        platforms: [],
        commands: {
          build: [
            probe("metadata", "169.254.169.254", 80),
            probe("link_local", "169.254.1.1", 80),
            probe("host_loopback", "10.0.2.2", port),
            probe("own_loopback", "127.0.0.1", port),
            "cat /proc/net/route | cut -f1,2,4 | sort",
          ],
        },
      }),
    );
    const done = await ci.waitFor(id);
    expect(done.status).toBe("succeeded");
    const text = await ci.buildLog(id);
    expect(probes(text)).toEqual({
      metadata: "blocked: No route to host",
      link_local: "blocked: No route to host",
      // slirp4netns answers for 10.0.2.2 itself, refusing what would lead to the host's loopback.
      host_loopback: "blocked: Network is unreachable",
      own_loopback: "blocked: Connection refused",
    });
    expect(text).not.toContain("ASIASTANDIN");
  }, 120_000);

  test("network: none leaves the build only its own loopback", async () => {
    await ci.startRunner({ via: { prefix: inNetns, url: `http://127.0.0.1:${port}` } });
    const id = await ci.build(
      await ci.pipeline({
        platforms: [],
        network: "none",
        commands: { build: [probe("metadata", "169.254.169.254", 80), probe("host_loopback", "10.0.2.2", port), "ls /sys/class/net"] },
      }),
    );
    const done = await ci.waitFor(id);
    expect(done).toMatchObject({ status: "succeeded", executor: { network: "none" } });
    const text = await ci.buildLog(id);
    expect(probes(text)).toEqual({ metadata: "blocked: Network is unreachable", host_loopback: "blocked: Network is unreachable" });
    expect(text).toContain("$ ls /sys/class/net\nlo\n");
  }, 120_000);
});

describe("clean-up that survives anything", () => {
  test("processes a step left running are stopped when the steps end, saying which step, and the build still succeeds", async () => {
    await ci.startRunner();
    const id = await ci.build(await ci.pipeline({ platforms: [], commands: { pre_build: ["sleep 3140 &", "echo started"], build: ["echo built"] } }));
    const done = await ci.waitFor(id);
    expect(done.status).toBe("succeeded");
    expect(await ci.buildLog(id)).toMatch(/\[roost\] stopping processes left running by step pre_build \(process group \d+\): the job is over/);
    expect(await containersOf(id)).toEqual([]);
    expect(await sh("pgrep -f 'sleep 314[0]' | wc -l")).toBe("0");
  }, 120_000);

  test("a canceled build's container, its processes and mounts are gone", async () => {
    const runner = await ci.startRunner();
    const id = await ci.build(await ci.pipeline({ platforms: [], commands: { build: ["sleep 3141 & sleep 3142"] } }));
    const container = await runningContainer(id, "sleep 3142");
    expect((await http(daemon.url, "POST", `/v1/builds/${id}/cancel`, { token: ci.owner })).body.build.status).toBe("canceled");
    expect(await nothingLeft(id, container, runner.workDir)).toEqual(NOTHING_LEFT);
    expect(await sh("pgrep -f 'sleep 314[12]' | wc -l")).toBe("0");
  }, 120_000);

  test("a build past its timeout fails with reason timeout, and its container is gone", async () => {
    const runner = await ci.startRunner();
    const id = await ci.build(await ci.pipeline({ platforms: [], timeout_seconds: 10, commands: { build: ["sleep 3143 & sleep 3144"] } }));
    const container = await runningContainer(id, "sleep 3144");
    const done = await ci.waitFor(id);
    expect(done).toMatchObject({ status: "failed", exit_code: 124, failure_reason: "timeout: the build ran past its timeout of 10 s" });
    expect(await nothingLeft(id, container, runner.workDir)).toEqual(NOTHING_LEFT);
    expect(await sh("pgrep -f 'sleep 314[34]' | wc -l")).toBe("0");
  }, 120_000);

  test("SIGTERM to the runner cancels its build and removes the container before it exits", async () => {
    const runner = await ci.startRunner();
    const id = await ci.build(await ci.pipeline({ platforms: [], commands: { build: ["sleep 3145"] } }));
    const container = await runningContainer(id, "sleep 3145");
    runner.proc.kill("SIGTERM");
    expect(await runner.proc.exited).toBe(0);
    expect(await leftovers(id, container, runner.workDir)).toEqual(NOTHING_LEFT);
    expect(await ci.waitFor(id)).toMatchObject({ status: "canceled", failure_reason: "the runner was stopped (SIGTERM) while the build ran" });
  }, 120_000);

  test("kill -9 leaves the container running; the restarted runner removes it, the volume its image declares, its workspace and its cache homes", async () => {
    // An image that declares a VOLUME: the engine makes an anonymous volume for each container.
    const dir = mkdtempSync(join(work, "image-"));
    writeFileSync(join(dir, "Containerfile"), `FROM ${image}\nVOLUME /roost-test-volume\n`);
    await sh(`podman build --quiet --pull=never -t localhost/roost-test-volume:latest ${dir}`);
    const volumesBefore = await sh("podman volume ls --quiet");
    const runner = await ci.startRunner();
    const id = await ci.build(await ci.pipeline({ platforms: [], image: "localhost/roost-test-volume:latest", commands: { build: ["sleep 3146"] } }));
    const container = await runningContainer(id, "sleep 3146");
    expect(await sh("podman volume ls --quiet")).not.toBe(volumesBefore);
    runner.proc.kill("SIGKILL");
    await runner.proc.exited;
    await Bun.sleep(500);
    expect(await containersOf(id)).toEqual([container]);
    const restarted = await ci.startRunner({ again: runner });
    expect(await nothingLeft(id, container, runner.workDir)).toEqual(NOTHING_LEFT);
    expect(await sh("pgrep -f 'sleep 314[6]' | wc -l")).toBe("0");
    expect(restarted.lines.some((l) => l.includes("removed what jobs this runner no longer runs had left"))).toBe(true);
    expect(await sh("podman volume ls --quiet")).toBe(volumesBefore);
  }, 120_000);
});

describe("the image", () => {
  /** Builds `localhost/roost-test-moving:latest` from the test image with a marker file; its image id. */
  async function tagMovingImage(marker: string): Promise<string> {
    const dir = mkdtempSync(join(work, "image-"));
    writeFileSync(join(dir, "marker"), `${marker}\n`);
    writeFileSync(join(dir, "Containerfile"), `FROM ${image}\nCOPY marker /etc/roost-test-image\n`);
    return (await sh(`podman build --quiet --pull=never -t localhost/roost-test-moving:latest ${dir}`)).split("\n").at(-1)!;
  }

  test("is recorded by digest on the build; a re-run runs that digest after the tag moved on", async () => {
    await ci.startRunner();
    const first = await tagMovingImage("first image");
    const id = await ci.pipeline({ platforms: [], image: "localhost/roost-test-moving:latest", commands: { build: ["cat /etc/roost-test-image"] } });
    const original = await ci.waitFor(await ci.build(id));
    expect(original.status).toBe("succeeded");
    expect(await ci.buildLog(original.id)).toContain("\nfirst image\n");
    const digest = await sh("podman image inspect --format '{{.Digest}}' localhost/roost-test-moving:latest");
    expect(original.executor).toEqual({
      kind: "container",
      engine: expect.stringMatching(/^podman \d/),
      image: "localhost/roost-test-moving:latest",
      image_digest: `localhost/roost-test-moving@${digest}`,
      network: "default",
      limits: { cpus: null, memory_mb: null, pids: 4096, disk_mb: null },
      error: null,
    });

    const second = await tagMovingImage("second image");
    const rerun = await ci.waitFor((await http(daemon.url, "POST", `/v1/builds/${original.id}/rerun`, { token: ci.owner })).body.build.id);
    expect(rerun.status).toBe("succeeded");
    expect(rerun.config_snapshot.execution_config.image).toBe(`localhost/roost-test-moving@${digest}`);
    expect(rerun.executor.image_digest).toBe(`localhost/roost-test-moving@${digest}`);
    expect(await ci.buildLog(rerun.id)).toContain("\nfirst image\n");
    // A new build of the pipeline takes the tag as it is now.
    const fresh = await ci.waitFor(await ci.build(id));
    expect(await ci.buildLog(fresh.id)).toContain("\nsecond image\n");
    expect(fresh.executor.image_digest).not.toBe(original.executor.image_digest);
    await sh(`podman rmi --force ${first} ${second} >/dev/null 2>&1 || true`);
  }, 180_000);

  test("an image the engine cannot get fails the build at the container step, saying why, on the build", async () => {
    await ci.startRunner();
    const id = await ci.build(await ci.pipeline({ platforms: [], image: "localhost/roost-test-missing:1", commands: { build: ["echo never"] } }));
    const done = await ci.waitFor(id);
    expect(done).toMatchObject({ status: "failed", failure_reason: expect.stringMatching(/^the image localhost\/roost-test-missing:1 could not be pulled: /) });
    expect(done.executor).toMatchObject({ kind: "container", image: "localhost/roost-test-missing:1", image_digest: null, error: done.failure_reason });
    expect(stepStatuses(done)).toEqual([
      ["checkout", "succeeded"],
      ["container", "failed"],
      ["build", "skipped"],
    ]);
  }, 120_000);
});

describe("private images: registry_credentials", () => {
  // A real registry (Debian's docker-registry) with htpasswd authentication holds the test image;
  // the engine has no tag of it, so each build's pull goes to the registry with the auth file.
  const PASSWORD = "s3cret-registry-pass";
  let registry: TestRegistry;
  let reference = "";

  async function setVariable(key: string, value: string, secret: boolean): Promise<void> {
    const res = await http(daemon.url, "PUT", `/v1/projects/${ci.projectId}/variables/${key}`, { token: ci.owner, body: { value, secret } });
    if (res.status >= 300) throw new Error(JSON.stringify(res.body));
  }

  beforeAll(async () => {
    registry = await startRegistry({ ci: PASSWORD });
    reference = `${registry.host}/acme/flutter:1`;
    const auth = join(work, "push-auth.json");
    writeFileSync(auth, registry.authFile("ci", PASSWORD), { mode: 0o600 });
    await sh(
      `CONTAINERS_REGISTRIES_CONF=${registry.registriesConf} podman push --quiet --authfile ${auth} ${image} ${reference} && podman rmi --force ${reference} >/dev/null 2>&1 || true`,
    );
    rmSync(auth);
    await setVariable("REGISTRY_AUTH", registry.authFile("ci", PASSWORD), true);
    await setVariable("WRONG_REGISTRY_AUTH", registry.authFile("ci", "not-the-password"), true);
    await setVariable("PLAIN_REGISTRY_AUTH", registry.authFile("ci", PASSWORD), false);
  }, 120_000);

  afterAll(async () => {
    await sh(`podman rmi --force ${reference} >/dev/null 2>&1 || true`).catch(() => {});
    await registry?.stop();
  });

  const privateRunner = () => ci.startRunner({ env: { CONTAINERS_REGISTRIES_CONF: registry.registriesConf } });

  test("a build pulls its image with the project's secret, which is in no log, process, file or step environment", async () => {
    const runner = await privateRunner();
    const id = await ci.build(
      await ci.pipeline({ platforms: [], image: reference, registry_credentials: "REGISTRY_AUTH", commands: { build: ["env | sort", "sleep 3"] } }),
    );
    await runningContainer(id, "sleep 3");
    // While a step runs: no process's arguments and no file under the runner's directories hold the credentials.
    const basic = Buffer.from(`ci:${PASSWORD}`).toString("base64");
    const processes = await sh("ps -eo args");
    expect(processes).not.toContain(PASSWORD);
    expect(processes).not.toContain(basic);
    expect(await sh(`grep -rlF -e '${PASSWORD}' -e '${basic}' ${runner.workDir} ${join(work, "runner-home")} 2>/dev/null || true`)).toBe("");
    const done = await ci.waitFor(id);
    const text = await ci.buildLog(id);
    expect(done.status).toBe("succeeded");
    expect(text).toContain(`[roost] pulling ${reference} with the registry credentials REGISTRY_AUTH`);
    expect(text).not.toMatch(/^REGISTRY_AUTH=/m);
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(basic);
    expect(done.executor.image_digest).toStartWith(`${registry.host}/acme/flutter@sha256:`);
  }, 180_000);

  test.each([
    [
      "WRONG_REGISTRY_AUTH",
      `the image REF could not be pulled with the registry credentials WRONG_REGISTRY_AUTH: initializing source docker://REF: reading manifest 1 in HOST/acme/flutter: unauthorized: authentication required`,
    ],
    [
      "MISSING_REGISTRY_AUTH",
      "registry_credentials names MISSING_REGISTRY_AUTH, but neither the project nor the pipeline has a secret variable MISSING_REGISTRY_AUTH",
    ],
    ["PLAIN_REGISTRY_AUTH", "registry_credentials names PLAIN_REGISTRY_AUTH, which is not a secret: set it again with secret: true"],
  ])(
    "%s: the build fails at the container step, saying why",
    async (key, reason) => {
      await privateRunner();
      const id = await ci.build(await ci.pipeline({ platforms: [], image: reference, registry_credentials: key, commands: { build: ["echo never"] } }));
      const done = await ci.waitFor(id);
      const expected = reason.replaceAll("REF", reference).replaceAll("HOST", registry.host);
      expect(done).toMatchObject({ status: "failed", failure_reason: expected });
      expect(done.executor).toMatchObject({ image: reference, image_digest: null, error: expected });
      expect(stepStatuses(done)).toEqual([
        ["checkout", "succeeded"],
        ["container", "failed"],
        ["build", "skipped"],
      ]);
      expect(await ci.buildLog(id)).not.toContain(PASSWORD);
    },
    120_000,
  );
});

describe("services", () => {
  test("a step reaches a service at its alias; after the build nothing of it remains", async () => {
    await ci.startRunner();
    const id = await ci.buildWithService("hello from the web service");
    const done = await ci.waitFor(id);
    const text = await ci.buildLog(id);
    expect(done.status).toBe("succeeded");
    expect(text).toContain(`[roost] service web: image ${image}, command ${JSON.stringify(GREETING_SERVER)}, reachable at web (the build's loopback)`);
    expect(text).toContain("HTTP/1.0 200 OK");
    expect(text).toContain("\nhello from the web service\n");
    expect(await containersOf(id)).toEqual([]);
    expect(await sh("pgrep -f 'GREETIN[G]' | wc -l")).toBe("0");
  }, 120_000);

  test("a service that stopped is said in a failed build's log, with its exit code and last output", async () => {
    await ci.startRunner();
    const id = await ci.build(
      await ci.pipeline({
        platforms: [],
        services: [{ image, alias: "web", command: ["bash", "-c", "echo 'web: no configuration at /etc/web.conf' >&2; exit 3"] }],
        commands: { build: ["sleep 1", "exec 3<>/dev/tcp/web/8080"] },
      }),
    );
    const done = await ci.waitFor(id);
    expect(done.status).toBe("failed");
    expect(await ci.buildLog(id)).toContain(
      "[roost] service web is not running (exit code 3); its last output:\n[roost]   web: no configuration at /etc/web.conf\n",
    );
    expect(await containersOf(id)).toEqual([]);
  }, 120_000);

  test("network: none leaves the build and its service their shared loopback, and nothing else", async () => {
    await ci.startRunner();
    const id = await ci.buildWithService("hello without a network", ["ls /sys/class/net"], { network: "none" });
    const done = await ci.waitFor(id);
    const text = await ci.buildLog(id);
    expect(done.status).toBe("succeeded");
    expect(text).toContain("\nhello without a network\n");
    expect(text).toContain("$ ls /sys/class/net\nlo\n");
  }, 120_000);

  test("kill -9 leaves the build and its service running; the restarted runner removes both", async () => {
    const runner = await ci.startRunner();
    const id = await ci.buildWithService("hi", ["sleep 3147"]);
    const container = await runningContainer(id, "sleep 3147");
    runner.proc.kill("SIGKILL");
    await runner.proc.exited;
    await Bun.sleep(500);
    expect((await containersOf(id)).length).toBe(2);
    await ci.startRunner({ again: runner });
    expect(await nothingLeft(id, container, runner.workDir)).toEqual(NOTHING_LEFT);
    expect(await sh("pgrep -f 'sleep 314[7]|GREETIN[G]' | wc -l")).toBe("0");
  }, 120_000);
});

describe("limits", () => {
  test("a build past its memory limit fails saying it ran out of memory; the pipeline's limit within the runner's", async () => {
    await ci.startRunner({ args: ["--memory", "512m"] });
    const id = await ci.build(
      await ci.pipeline({
        platforms: [],
        limits: { memory_mb: 96 },
        commands: { build: ["echo allocating", "x=$(head -c 400000000 /dev/zero | tr '\\0' x); echo survived"] },
      }),
    );
    const done = await ci.waitFor(id);
    expect(done).toMatchObject({ status: "failed", failure_reason: "the build ran out of memory (limit 96 MiB)" });
    const text = await ci.buildLog(id);
    expect(text).toContain("memory 96 MiB");
    expect(done.executor.limits).toEqual({ cpus: null, memory_mb: 96, pids: 4096, disk_mb: null });
    expect(text).toContain("[roost] the build ran out of memory (limit 96 MiB): the kernel killed a process of step build");
    expect(text).not.toContain("\nsurvived");
  }, 120_000);

  test("a pipeline asking more than the runner allows gets the runner's, and the log says so; cpus and pids reach the container", async () => {
    await ci.startRunner({ args: ["--memory", "256m", "--cpus", "1", "--pids", "200"] });
    const id = await ci.build(
      await ci.pipeline({
        platforms: [],
        limits: { memory_mb: 1024, cpus: 0.5 },
        commands: {
          build: [
            "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max /sys/fs/cgroup/cpu.max",
          ],
        },
      }),
    );
    const done = await ci.waitFor(id);
    expect(done.status).toBe("succeeded");
    expect(done.executor.limits).toEqual({ cpus: 0.5, memory_mb: 256, pids: 200, disk_mb: null });
    const text = await ci.buildLog(id);
    expect(text).toContain("[roost] the pipeline's memory_mb 1 GiB is above this runner's 256 MiB: 256 MiB");
    expect(text).toContain(`\n${256 * 1024 * 1024}\n200\n50000\n`);
  }, 120_000);

  test("a build writing past its disk limit is stopped, saying so", async () => {
    await ci.startRunner({ args: ["--disk", "20m"] });
    const id = await ci.build(await ci.pipeline({ platforms: [], commands: { build: ["head -c 60000000 /dev/zero > big.bin && sleep 3148"] } }));
    const done = await ci.waitFor(id);
    expect(done).toMatchObject({
      status: "failed",
      failure_reason: expect.stringMatching(/^the build used more disk than its limit \(\d+ MiB written, limit 20 MiB\)$/),
    });
    expect(await containersOf(id)).toEqual([]);
  }, 120_000);
});
