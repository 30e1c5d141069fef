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
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { http, type Daemon } from "../helpers/daemon.ts";
import { sh as shIn } from "../helpers/ci-daemon.ts";
import { pollUntil } from "../helpers/poll.ts";
import { ensureTestImage, startContainerWorld, type ContainerWorld } from "../helpers/containers.ts";
import { startDockerd, type TestDockerd } from "../support/dockerd.ts";
import { startRegistry, type TestRegistry } from "../support/registry.ts";

const work = mkdtempSync(join(tmpdir(), "roost-docker-e2e-"));
let image = "";
let dockerd: TestDockerd;
let ci: ContainerWorld;
let daemon: Daemon;
const sh = (cmd: string) => shIn(cmd, work);

/** The ids of the build's containers (any state), by the label the runner gives them. */
async function containersOf(buildId: string): Promise<string[]> {
  return (await dockerd.docker(["ps", "--all", "--no-trunc", "--filter", `label=roost.build=${buildId}`, "--format", "{{.ID}}"])).split("\n").filter(Boolean);
}

/** Waits until a process matching `pattern` (pgrep -f) runs: a build's step, seen from the host. */
async function runningProcess(pattern: string): Promise<void> {
  await pollUntil(
    `a process matching ${pattern}`,
    () => sh(`pgrep -f '${pattern}' | wc -l`),
    (count) => count !== "0",
    90_000,
    200,
  );
}

/** Polls until the build has no container left (or gives up and answers those left). */
async function noContainersOf(buildId: string): Promise<string[]> {
  return pollUntil(
    "no container left",
    () => containersOf(buildId),
    (left) => left.length === 0,
    30_000,
    300,
  ).catch(() => containersOf(buildId));
}

beforeAll(async () => {
  image = ensureTestImage();
  dockerd = await startDockerd();
  const saved = Bun.spawn(["podman", "save", image], { stdout: "pipe", stderr: "ignore" });
  await dockerd.docker(["load", "--quiet"], saved.stdout as ReadableStream);
  ci = await startContainerWorld({ work, engine: "docker", image, repositoryId: 80, env: { DOCKER_HOST: dockerd.host }, timeoutMs: 120_000 });
  ({ daemon } = ci);
}, 600_000);

afterEach(() => ci.stopRunners());

afterAll(async () => {
  await ci?.stop();
  await dockerd?.stop();
  rmSync(work, { recursive: true, force: true });
}, 90_000);

describe("a build on Docker", () => {
  test("runs in a fresh container as uid 1000, with its file variable in the container's tmpfs, secrets masked, the metadata address unreachable; nothing is left", async () => {
    await http(daemon.url, "PUT", `/v1/projects/${ci.projectId}/variables/SIGNING_KEY`, {
      token: ci.owner,
      body: { value: Buffer.from("docker-file-secret\n").toString("base64"), secret: true, file: true },
    });
    await ci.startRunner();
    const id = await ci.build(
      await ci.pipeline({
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
    const done = await ci.waitFor(id);
    const text = await ci.buildLog(id);
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
  }, 180_000);

  test("processes a step left running are stopped when the steps end, and the build succeeds", async () => {
    await ci.startRunner();
    const id = await ci.build(await ci.pipeline({ platforms: [], commands: { pre_build: ["sleep 3240 &", "echo started"], build: ["echo built"] } }));
    const done = await ci.waitFor(id);
    expect(done.status).toBe("succeeded");
    expect(await ci.buildLog(id)).toMatch(/\[roost\] stopping processes left running by step pre_build \(process group \d+\): the job is over/);
    expect(await noContainersOf(id)).toEqual([]);
    expect(await sh("pgrep -f 'sleep 324[0]' | wc -l")).toBe("0");
  }, 120_000);
});

describe("services on Docker", () => {
  test("a step reaches a service at its alias; nothing of it remains after the build", async () => {
    await ci.startRunner();
    const id = await ci.buildWithService("hello from docker's web service");
    const done = await ci.waitFor(id);
    expect(done.status).toBe("succeeded");
    expect(await ci.buildLog(id)).toContain("\nhello from docker's web service\n");
    expect(await noContainersOf(id)).toEqual([]);
  }, 120_000);

  test("kill -9 leaves the build and its service running; the restarted runner removes both", async () => {
    const runner = await ci.startRunner();
    const id = await ci.buildWithService("hi", ["sleep 3247"]);
    await runningProcess("sleep 324[7]");
    runner.proc.kill("SIGKILL");
    await runner.proc.exited;
    await Bun.sleep(500);
    expect((await containersOf(id)).length).toBe(2);
    await ci.startRunner({ again: runner });
    expect(await noContainersOf(id)).toEqual([]);
    expect(await sh("pgrep -f 'sleep 324[7]|GREETIN[G]' | wc -l")).toBe("0");
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
      await http(daemon.url, "PUT", `/v1/projects/${ci.projectId}/variables/${key}`, {
        token: ci.owner,
        body: { value: registry.authFile("ci", password), secret: true },
      });
  }, 120_000);

  afterAll(async () => {
    await registry?.stop();
  });

  test("is pulled with the project's secret, recorded by digest; a wrong secret fails the build saying why", async () => {
    await ci.startRunner();
    const id = await ci.build(
      await ci.pipeline({ platforms: [], image: reference, registry_credentials: "DOCKER_REGISTRY_AUTH", commands: { build: ["echo pulled"] } }),
    );
    const done = await ci.waitFor(id);
    const text = await ci.buildLog(id);
    expect(done.status).toBe("succeeded");
    expect(text).toContain(`[roost] pulling ${reference} with the registry credentials DOCKER_REGISTRY_AUTH`);
    expect(text).not.toContain(PASSWORD);
    expect(done.executor.image_digest).toStartWith(`${registry.host}/acme/flutter@sha256:`);

    const wrong = await ci.waitFor(
      await ci.build(
        await ci.pipeline({ platforms: [], image: reference, registry_credentials: "WRONG_DOCKER_REGISTRY_AUTH", commands: { build: ["echo never"] } }),
      ),
    );
    expect(wrong).toMatchObject({
      status: "failed",
      failure_reason: expect.stringMatching(
        new RegExp(
          `^the image ${reference} could not be pulled with the registry credentials WRONG_DOCKER_REGISTRY_AUTH: .*(unauthorized|authentication required)`,
        ),
      ),
    });
  }, 180_000);
});
