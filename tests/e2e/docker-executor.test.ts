// The container executor on Docker (docs/runners.md "Container engines"): a real daemon, a real
// `roost runner --executor container --engine docker` process and a Docker daemon of the test's
// own (tests/support/dockerd.ts; Debian's docker.io), running builds in the test image that
// scripts/ensure-test-image builds with Podman and `docker load` takes over. The behaviours of
// tests/e2e/container-executor.test.ts where Docker differs from Podman in the runner's code: the
// build's user and its file variables' tmpfs, the metadata routes in a bridge network's
// namespace, processes a step left running (Docker's top says host pids), services in the build's
// network, a private image pulled with DOCKER_CONFIG, and start-up clean-up (Docker's ps labels).
//
// A machine where dockerd cannot run fails these tests, saying why; none is skipped.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { BUN, REPO_ROOT, ROOST, http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { startDockerd, type TestDockerd } from "../support/dockerd.ts";
import { startRegistry, type TestRegistry } from "../support/registry.ts";

const work = mkdtempSync(join(tmpdir(), "roost-docker-e2e-"));
const repo = join(work, "app");
let image = "";
let dockerd: TestDockerd;
let daemon: Daemon;
let host: HostApiStandIn;
let owner = "";
let projectId = "";
let commit = "";
const running: Subprocess[] = [];

async function sh(cmd: string, cwd = work): Promise<string> {
  const p = Bun.spawn(["bash", "-c", cmd], { cwd, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${cmd}: exit ${code}: ${err}`);
  return out.trim();
}

interface Runner {
  id: string;
  token: string;
  workDir: string;
  proc: Subprocess;
}

async function registerRunner(): Promise<{ id: string; token: string }> {
  const created = (await http(daemon.url, "POST", "/v1/runners", { token: owner, body: { name: `d-${crypto.randomUUID().slice(0, 6)}` } })).body;
  return { id: created.runner.id, token: created.token };
}

function startRunner(r: { id: string; token: string }, workDir = join(work, `runner-work-${r.id}`)): Runner {
  const proc = Bun.spawn([BUN, ROOST, "runner", "--executor", "container", "--engine", "docker", "--image", image], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: join(work, "runner-home"),
      DOCKER_HOST: dockerd.host,
      ROOST_URL: daemon.url,
      ROOST_RUNNER_ID: r.id,
      ROOST_RUNNER_TOKEN: r.token,
      ROOST_RUNNER_WORKDIR: workDir,
      ROOST_RUNNER_GRACE_SECONDS: "2",
    },
    stdout: "ignore",
    stderr: "ignore",
  });
  running.push(proc);
  return { ...r, workDir, proc };
}

async function pipeline(executionConfig: Record<string, unknown>): Promise<string> {
  const res = await http(daemon.url, "POST", `/v1/projects/${projectId}/pipelines`, {
    token: owner,
    body: { name: `p-${crypto.randomUUID().slice(0, 6)}`, execution_config: executionConfig },
  });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.pipeline.id;
}

async function build(pipelineId: string): Promise<string> {
  const res = await http(daemon.url, "POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, commit_sha: commit } });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.build.id;
}

const finished = (b: { status: string }) => ["succeeded", "failed", "canceled"].includes(b.status);

async function waitFor(buildId: string, predicate: (b: any) => boolean, timeoutMs = 120_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const b = (await http(daemon.url, "GET", `/v1/builds/${buildId}`, { token: owner })).body.build;
    if (predicate(b)) return b;
    if (Date.now() > deadline) throw new Error(`build did not get there: ${JSON.stringify(b)}`);
    await Bun.sleep(200);
  }
}

async function log(buildId: string): Promise<string> {
  return fetch(`${daemon.url}/v1/builds/${buildId}/logs`, { headers: { authorization: `Bearer ${owner}`, accept: "text/plain" } }).then((r) => r.text());
}

/** The ids of the build's containers (any state), by the label the runner gives them. */
async function containersOf(buildId: string): Promise<string[]> {
  return (await dockerd.docker(["ps", "--all", "--no-trunc", "--filter", `label=roost.build=${buildId}`, "--format", "{{.ID}}"])).split("\n").filter(Boolean);
}

/** Waits until a process matching `pattern` (pgrep -f) runs: a build's step, seen from the host. */
async function runningProcess(pattern: string): Promise<void> {
  const deadline = Date.now() + 90_000;
  while ((await sh(`pgrep -f '${pattern}' | wc -l`)) === "0") {
    if (Date.now() > deadline) throw new Error(`no process matches ${pattern}`);
    await Bun.sleep(200);
  }
}

async function noContainersOf(buildId: string, timeoutMs = 30_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = await containersOf(buildId);
    if (left.length === 0 || Date.now() > deadline) return left;
    await Bun.sleep(300);
  }
}

beforeAll(async () => {
  const made = Bun.spawnSync(["bash", join(REPO_ROOT, "scripts/ensure-test-image")], { stdout: "pipe", stderr: "pipe" });
  if (made.exitCode !== 0)
    throw new Error(`the test image cannot be built (scripts/ensure-test-image exited ${made.exitCode}): ${made.stderr.toString().trim()}`);
  image = made.stdout.toString().trim().split("\n").at(-1)!;
  dockerd = await startDockerd();
  const saved = Bun.spawn(["podman", "save", image], { stdout: "pipe", stderr: "ignore" });
  await dockerd.docker(["load", "--quiet"], saved.stdout as ReadableStream);

  mkdirSync(repo, { recursive: true });
  await sh(
    "git init -q -b main && echo '# app' > README.md && mkdir lib && echo 'void main() {}' > lib/main.dart && printf 'packages: {}\\n' > pubspec.lock && git add . && git -c user.email=ci@example.test -c user.name=CI commit -q -m 'first commit'",
    repo,
  );
  commit = await sh("git rev-parse HEAD", repo);
  daemon = await startDaemon({ dataDir: join(work, "data"), cleanup: false, env: { ROOST_RUNNER_HEARTBEAT_SECONDS: "1", ROOST_RUNNER_LEASE_SECONDS: "4" } });
  host = await startHostApiStandIn();
  host.github.repos.push({ id: 80, full_name: "acme/app", default_branch: "main", private: true, clone_url: repo });
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
      webhook_secret: "0123456789abcdef-secret",
    },
  });
  const repoId = (await http(daemon.url, "GET", "/v1/integration-repositories", { token: owner })).body.repositories[0].id;
  projectId = (await http(daemon.url, "POST", "/v1/projects", { token: owner, body: { repository_id: repoId } })).body.project.id;
}, 600_000);

afterEach(async () => {
  for (const p of running.splice(0)) {
    p.kill("SIGTERM");
    await p.exited;
  }
});

afterAll(async () => {
  for (const p of running) p.kill("SIGKILL");
  await dockerd?.stop();
  await daemon?.stop();
  await host?.stop();
  rmSync(work, { recursive: true, force: true });
}, 90_000);

describe("a build on Docker", () => {
  test("runs in a fresh container as uid 1000, with its file variable in the container's tmpfs, secrets masked, the metadata address unreachable; nothing is left", async () => {
    await http(daemon.url, "PUT", `/v1/projects/${projectId}/variables/SIGNING_KEY`, {
      token: owner,
      body: { value: Buffer.from("docker-file-secret\n").toString("base64"), secret: true, file: true },
    });
    const runner = startRunner(await registerRunner());
    const id = await build(
      await pipeline({
        platforms: [],
        env: [{ key: "SIGNING_PASSWORD", value: "s3cr3t-docker-pass", secret: true }],
        commands: {
          build: [
            "id -u",
            'echo "file at $SIGNING_KEY: $(cat "$SIGNING_KEY" | wc -c) bytes"',
            "echo password $SIGNING_PASSWORD",
            "(exec 3<>/dev/tcp/169.254.169.254/80) 2>&1 | sed 's/.*: //' || true",
            "flutter pub get",
          ],
        },
      }),
    );
    const done = await waitFor(id, finished);
    const text = await log(id);
    expect(done.status).toBe("succeeded");
    expect(done.executor).toMatchObject({ kind: "container", engine: expect.stringMatching(/^docker \d/), image, network: "default", error: null });
    expect(text).toContain(`[roost] container: docker`);
    expect(text).toContain("\n1000\n");
    expect(text).toContain("file at /run/roost/files/SIGNING_KEY: 19 bytes\n");
    expect(text).toContain("password ********");
    expect(text).not.toContain("s3cr3t-docker-pass");
    expect(text).toContain("No route to host");
    expect(text).toContain("flutter stand-in: packages of pubspec.lock");
    expect(await noContainersOf(id)).toEqual([]);
    runner.proc.kill("SIGTERM");
    await runner.proc.exited;
  }, 180_000);

  test("processes a step left running are stopped when the steps end, and the build succeeds", async () => {
    const runner = startRunner(await registerRunner());
    const id = await build(await pipeline({ platforms: [], commands: { pre_build: ["sleep 3240 &", "echo started"], build: ["echo built"] } }));
    const done = await waitFor(id, finished);
    expect(done.status).toBe("succeeded");
    expect(await log(id)).toMatch(/\[roost\] stopping processes left running by step pre_build \(process group \d+\): the job is over/);
    expect(await noContainersOf(id)).toEqual([]);
    expect(await sh("pgrep -f 'sleep 324[0]' | wc -l")).toBe("0");
    runner.proc.kill("SIGTERM");
    await runner.proc.exited;
  }, 120_000);
});

describe("services on Docker", () => {
  const server = [
    "perl",
    "-MIO::Socket::INET",
    "-e",
    '$s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 8080, Listen => 5, ReuseAddr => 1) or die $!; while ($c = $s->accept) { print $c "HTTP/1.0 200 OK\\r\\n\\r\\n$ENV{GREETING}\\n"; close $c }',
  ];
  const client =
    "for i in $(seq 100); do (exec 3<>/dev/tcp/web/8080 && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3) 2>/dev/null && break; sleep 0.1; done";

  test("a step reaches a service at its alias; nothing of it remains after the build", async () => {
    const runner = startRunner(await registerRunner());
    const id = await build(
      await pipeline({
        platforms: [],
        services: [{ image, alias: "web", env: { GREETING: "hello from docker's web service" }, command: server }],
        commands: { build: [client] },
      }),
    );
    const done = await waitFor(id, finished);
    expect(done.status).toBe("succeeded");
    expect(await log(id)).toContain("\nhello from docker's web service\n");
    expect(await noContainersOf(id)).toEqual([]);
    runner.proc.kill("SIGTERM");
    await runner.proc.exited;
  }, 120_000);

  test("kill -9 leaves the build and its service running; the restarted runner removes both", async () => {
    const registered = await registerRunner();
    const runner = startRunner(registered);
    const id = await build(
      await pipeline({
        platforms: [],
        services: [{ image, alias: "web", env: { GREETING: "hi" }, command: server }],
        commands: { build: [client, "sleep 3247"] },
      }),
    );
    await runningProcess("sleep 324[7]");
    runner.proc.kill("SIGKILL");
    await runner.proc.exited;
    await Bun.sleep(500);
    expect((await containersOf(id)).length).toBe(2);
    const restarted = startRunner(registered, runner.workDir);
    expect(await noContainersOf(id)).toEqual([]);
    expect(await sh("pgrep -f 'sleep 324[7]|GREETIN[G]' | wc -l")).toBe("0");
    restarted.proc.kill("SIGTERM");
    await restarted.proc.exited;
  }, 120_000);
});

describe("a private image on Docker", () => {
  // Docker's daemon takes a registry on 127.0.0.0/8 as plain HTTP without being told.
  const PASSWORD = "s3cret-docker-registry-pass";
  let registry: TestRegistry;
  let reference = "";

  beforeAll(async () => {
    registry = await startRegistry({ ci: PASSWORD });
    reference = `${registry.host}/acme/flutter:1`;
    const config = mkdtempSync(join(work, "docker-config-"));
    writeFileSync(join(config, "config.json"), registry.authFile("ci", PASSWORD), { mode: 0o600 });
    await dockerd.docker(["tag", image, reference]);
    await sh(`DOCKER_HOST=${dockerd.host} DOCKER_CONFIG=${config} docker push --quiet ${reference} >/dev/null`);
    await dockerd.docker(["rmi", reference]);
    rmSync(config, { recursive: true });
    for (const [key, password] of [
      ["DOCKER_REGISTRY_AUTH", PASSWORD],
      ["WRONG_DOCKER_REGISTRY_AUTH", "not-the-password"],
    ] as const)
      await http(daemon.url, "PUT", `/v1/projects/${projectId}/variables/${key}`, {
        token: owner,
        body: { value: registry.authFile("ci", password), secret: true },
      });
  }, 120_000);

  afterAll(async () => {
    await registry?.stop();
  });

  test("is pulled with the project's secret, recorded by digest; a wrong secret fails the build saying why", async () => {
    const runner = startRunner(await registerRunner());
    const id = await build(
      await pipeline({ platforms: [], image: reference, registry_credentials: "DOCKER_REGISTRY_AUTH", commands: { build: ["echo pulled"] } }),
    );
    const done = await waitFor(id, finished);
    const text = await log(id);
    expect(done.status).toBe("succeeded");
    expect(text).toContain(`[roost] pulling ${reference} with the registry credentials DOCKER_REGISTRY_AUTH`);
    expect(text).not.toContain(PASSWORD);
    expect(done.executor.image_digest).toStartWith(`${registry.host}/acme/flutter@sha256:`);

    const wrong = await waitFor(
      await build(await pipeline({ platforms: [], image: reference, registry_credentials: "WRONG_DOCKER_REGISTRY_AUTH", commands: { build: ["echo never"] } })),
      finished,
    );
    expect(wrong).toMatchObject({
      status: "failed",
      failure_reason: expect.stringMatching(
        new RegExp(
          `^the image ${reference} could not be pulled with the registry credentials WRONG_DOCKER_REGISTRY_AUTH: .*(unauthorized|authentication required)`,
        ),
      ),
    });
    runner.proc.kill("SIGTERM");
    await runner.proc.exited;
  }, 180_000);
});
