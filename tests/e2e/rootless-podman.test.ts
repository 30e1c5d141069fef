// The container executor on rootless Podman (docs/runners.md "Container engines"): a real daemon,
// and a real `roost runner --executor container --engine podman` run as an ordinary user
// (roost-rootless, made here with subordinate ids if missing) whose Podman is rootless. The test
// image is the one scripts/ensure-test-image builds, copied into that user's storage (podman save
// as root, podman load as the user). The pipeline has `network: none`: rootless Podman's
// slirp4netns needs /dev/net/tun, which the test machines give to root alone (docs/runners.md).
//
// A machine where rootless Podman cannot run a container fails this test, saying why; none is skipped.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runnerEnv, sh as shIn, spawnRunner, startGithubProject, type GithubProject, type RunnerProcess } from "../helpers/ci-daemon.ts";
import { TEST_CACHE_DIR, commitTestApp, ensureTestImage } from "../helpers/containers.ts";

const USER = "roost-rootless";
const work = mkdtempSync(join(tmpdir(), "roost-rootless-e2e-"));
const repo = join(work, "app");
const runnerWork = join(work, "runner-work");
let image = "";
let uid = 0;
let gid = 0;
let home = "";
let ci: GithubProject;
let runner: RunnerProcess | null = null;
let commit = "";
const sh = (cmd: string) => shIn(cmd, work);

/** A command run as the rootless user, with its own home (its Podman storage) and the tests' containers.conf. */
function asUser(cmd: string): Promise<string> {
  return shIn(
    `runuser -u ${USER} -- env -i PATH=/usr/bin:/bin HOME=${home} CONTAINERS_CONF=${join(work, "containers.conf")} bash -c ${JSON.stringify(cmd)}`,
    home,
  );
}

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error("this test makes its rootless user and needs root");
  image = ensureTestImage();

  // The user, with 65536 subordinate uids and gids (newuidmap/newgidmap: Debian's uidmap).
  await sh(`id -u ${USER} >/dev/null 2>&1 || useradd -m ${USER}`);
  for (const [file, flag] of [
    ["/etc/subuid", "--add-subuids"],
    ["/etc/subgid", "--add-subgids"],
  ] as const)
    if (
      !readFileSync(file, "utf8")
        .split("\n")
        .some((l) => l.startsWith(`${USER}:`))
    )
      await sh(`usermod ${flag} 300000-365535 ${USER}`);
  uid = Number(await sh(`id -u ${USER}`));
  gid = Number(await sh(`id -g ${USER}`));
  home = await sh(`getent passwd ${USER} | cut -d: -f6`);
  chmodSync(work, 0o755);
  await sh(`cp ${join(TEST_CACHE_DIR, "containers.conf")} containers.conf && chmod 644 containers.conf`);

  // The image in the user's storage.
  if (!(await asUser(`podman image exists ${image} && echo yes || true`))) {
    await sh(`podman save --quiet -o image.tar ${image} && chmod 644 image.tar`);
    await asUser(`podman load --quiet -i ${join(work, "image.tar")}`);
    rmSync(join(work, "image.tar"));
  }
  const probe = await asUser(`podman run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 ${image} true 2>&1 && echo ran || true`);
  if (!probe.endsWith("ran")) throw new Error(`rootless Podman cannot run a container on this machine: ${probe}`);

  // The repository the build checks out, the user's (git refuses a repository another user owns).
  commit = await commitTestApp(repo);
  await sh(`chown -R ${uid}:${gid} ${repo}`);
  mkdirSync(runnerWork);
  chownSync(runnerWork, uid, gid);

  ci = await startGithubProject({
    daemon: { dataDir: join(work, "data"), cleanup: false },
    repository: { id: 79, full_name: "acme/app", clone_url: repo },
  });
}, 600_000);

afterAll(async () => {
  runner?.proc.kill("SIGKILL");
  await asUser("podman ps --all --filter label=roost.runner --format '{{.ID}}' | xargs -r podman rm --force --time 0 >/dev/null").catch(() => {});
  await ci?.stop();
  rmSync(work, { recursive: true, force: true });
});

test("a runner run by an ordinary user on rootless Podman: the build succeeds as that user, its workspace writable, and nothing of its container is left", async () => {
  const r = await ci.registerRunner({ name: "rootless" });
  const pipelineId = await ci.createPipeline({
    name: "rootless",
    execution_config: {
      platforms: [],
      network: "none",
      commands: { build: ["echo uid $(id -u) gid $(id -g)", "echo written > $PWD/by-the-build && cat $PWD/by-the-build"] },
    },
  });
  const buildId = await ci.queueBuild(pipelineId, commit);

  // env -i: the runner's environment is only what is given here, as the user's own would be.
  const env = {
    PATH: "/usr/bin:/bin",
    HOME: home,
    CONTAINERS_CONF: join(work, "containers.conf"),
    ...runnerEnv(ci.url, r, runnerWork),
    ROOST_RUNNER_GRACE_SECONDS: "2",
  };
  const asUserPrefix = ["runuser", "-u", USER, "--", "env", "-i", ...Object.entries(env).map(([k, v]) => `${k}=${v}`)];
  runner = spawnRunner(["--executor", "container", "--engine", "podman", "--image", image, "--once"], {}, asUserPrefix);
  const [code] = await Promise.all([runner.proc.exited, runner.done]);
  expect({ code, stderr: runner.lines.join("\n") }).toMatchObject({ code: 0 });

  const build = await ci.buildOf(buildId);
  const text = await ci.buildLog(buildId);
  expect({ status: build.status, log: text }).toMatchObject({ status: "succeeded" });
  expect(text).toContain("[roost] container: podman (rootless)");
  expect(text).toContain(`steps as uid ${uid}`);
  // This machine's cgroups are v1, where rootless Podman ignores the container's cgroup limits.
  expect(text).toContain("pids 4096, disk unlimited (cpus, memory and pids not enforced: rootless Podman cannot set them on cgroups v1)");
  // keep-id: inside, the steps are the runner's own user, never root.
  expect(text).toContain(`uid ${uid} gid ${gid}`);
  expect(text).toContain("\nwritten\n");

  // Nothing of the job's container: no container of the build in the user's Podman, nor in root's,
  // and no job workspace or home left in the runner's work directory.
  expect(await asUser(`podman ps --all --filter label=roost.build=${buildId} --format '{{.ID}}'`)).toBe("");
  expect(await sh(`podman ps --all --filter label=roost.build=${buildId} --format '{{.ID}}'`)).toBe("");
  const left = ["jobs", "homes"].flatMap((d) => {
    try {
      return readdirSync(join(runnerWork, d)).map((j) => `${d}/${j}`);
    } catch {
      return [];
    }
  });
  expect(left).toEqual([]);
}, 300_000);
