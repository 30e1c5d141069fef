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
import type { Subprocess } from "bun";
import { BUN, REPO_ROOT, ROOST, http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";

const USER = "roost-rootless";
const work = mkdtempSync(join(tmpdir(), "roost-rootless-e2e-"));
const repo = join(work, "app");
const runnerWork = join(work, "runner-work");
const cacheDir = process.env.ROOST_TEST_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(process.env.HOME ?? "/root", ".cache"), "roost-tests");
let image = "";
let uid = 0;
let gid = 0;
let home = "";
let daemon: Daemon;
let host: HostApiStandIn;
let owner = "";
let runner: Subprocess<"ignore", "pipe", "pipe"> | null = null;
let commit = "";

async function sh(cmd: string, cwd = work): Promise<string> {
  const p = Bun.spawn(["bash", "-c", cmd], { cwd, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${cmd}: exit ${code}: ${err}`);
  return out.trim();
}

/** A command run as the rootless user, with its own home (its Podman storage) and the tests' containers.conf. */
function asUser(cmd: string): Promise<string> {
  return sh(
    `runuser -u ${USER} -- env -i PATH=/usr/bin:/bin HOME=${home} CONTAINERS_CONF=${join(work, "containers.conf")} bash -c ${JSON.stringify(cmd)}`,
    home,
  );
}

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error("this test makes its rootless user and needs root");
  const made = Bun.spawnSync(["bash", join(REPO_ROOT, "scripts/ensure-test-image")], { stdout: "pipe", stderr: "pipe" });
  if (made.exitCode !== 0) throw new Error(`scripts/ensure-test-image exited ${made.exitCode}: ${made.stderr.toString().trim()}`);
  image = made.stdout.toString().trim().split("\n").at(-1)!;

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
  await sh(`cp ${join(cacheDir, "containers.conf")} containers.conf && chmod 644 containers.conf`);

  // The image in the user's storage.
  if (!(await asUser(`podman image exists ${image} && echo yes || true`))) {
    await sh(`podman save --quiet -o image.tar ${image} && chmod 644 image.tar`);
    await asUser(`podman load --quiet -i ${join(work, "image.tar")}`);
    rmSync(join(work, "image.tar"));
  }
  const probe = await asUser(`podman run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 ${image} true 2>&1 && echo ran || true`);
  if (!probe.endsWith("ran")) throw new Error(`rootless Podman cannot run a container on this machine: ${probe}`);

  // The repository the build checks out, the user's (git refuses a repository another user owns).
  mkdirSync(repo, { recursive: true });
  await sh(
    "git init -q -b main && echo '# app' > README.md && mkdir lib && echo 'void main() {}' > lib/main.dart && printf 'packages: {}\\n' > pubspec.lock && git add . && git -c user.email=ci@example.test -c user.name=CI commit -q -m 'first commit'",
    repo,
  );
  commit = await sh("git rev-parse HEAD", repo);
  await sh(`chown -R ${uid}:${gid} ${repo}`);
  mkdirSync(runnerWork);
  chownSync(runnerWork, uid, gid);

  daemon = await startDaemon({ dataDir: join(work, "data"), cleanup: false });
  host = await startHostApiStandIn();
  host.github.repos.push({ id: 79, full_name: "acme/app", default_branch: "main", private: true, clone_url: repo });
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
}, 600_000);

afterAll(async () => {
  runner?.kill("SIGKILL");
  await asUser("podman ps --all --filter label=roost.runner --format '{{.ID}}' | xargs -r podman rm --force --time 0 >/dev/null").catch(() => {});
  await daemon?.stop();
  await host?.stop();
  rmSync(work, { recursive: true, force: true });
});

test("a runner run by an ordinary user on rootless Podman: the build succeeds as that user, its workspace writable, and nothing of its container is left", async () => {
  const repoId = (await http(daemon.url, "GET", "/v1/integration-repositories", { token: owner })).body.repositories[0].id;
  const projectId = (await http(daemon.url, "POST", "/v1/projects", { token: owner, body: { repository_id: repoId } })).body.project.id;
  const r = (await http(daemon.url, "POST", "/v1/runners", { token: owner, body: { name: "rootless" } })).body;
  const pipeline = await http(daemon.url, "POST", `/v1/projects/${projectId}/pipelines`, {
    token: owner,
    body: {
      name: "rootless",
      execution_config: {
        platforms: [],
        network: "none",
        commands: { build: ["echo uid $(id -u) gid $(id -g)", "echo written > $PWD/by-the-build && cat $PWD/by-the-build"] },
      },
    },
  });
  expect(pipeline.status).toBe(201);
  const created = await http(daemon.url, "POST", `/v1/projects/${projectId}/builds`, {
    token: owner,
    body: { pipeline_id: pipeline.body.pipeline.id, commit_sha: commit },
  });
  expect(created.status).toBe(201);
  const buildId = created.body.build.id;

  runner = Bun.spawn(
    [
      "runuser",
      "-u",
      USER,
      "--",
      "env",
      "-i",
      `PATH=/usr/bin:/bin`,
      `HOME=${home}`,
      `CONTAINERS_CONF=${join(work, "containers.conf")}`,
      `ROOST_URL=${daemon.url}`,
      `ROOST_RUNNER_ID=${r.runner.id}`,
      `ROOST_RUNNER_TOKEN=${r.token}`,
      `ROOST_RUNNER_WORKDIR=${runnerWork}`,
      "ROOST_RUNNER_GRACE_SECONDS=2",
      BUN,
      ROOST,
      "runner",
      "--executor",
      "container",
      "--engine",
      "podman",
      "--image",
      image,
      "--once",
    ],
    { cwd: REPO_ROOT, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
  const [stderr, code] = await Promise.all([new Response(runner.stderr).text(), runner.exited]);
  expect({ code, stderr }).toMatchObject({ code: 0 });

  const build = (await http(daemon.url, "GET", `/v1/builds/${buildId}`, { token: owner })).body.build;
  const text = await fetch(`${daemon.url}/v1/builds/${buildId}/logs`, { headers: { authorization: `Bearer ${owner}`, accept: "text/plain" } }).then((res) =>
    res.text(),
  );
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
