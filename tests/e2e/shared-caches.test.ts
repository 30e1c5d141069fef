// Dependency caches shared by every runner of a project (issue 24, docs/runners.md "Shared caches"):
// a real daemon on an S3-compatible bucket (tests/support/s3-server.ts) and two real runner
// processes with work directories of their own. Runner A builds, saves its cache and shares it
// through the daemon; runner B, which has never built the project, restores it from the bucket and
// finds the dependency in place instead of downloading it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { BUN, REPO_ROOT, ROOST, http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { startS3Server, type S3Server } from "../support/s3-server.ts";

const work = mkdtempSync(join(tmpdir(), "roost-shared-caches-e2e-"));
const repo = join(work, "app");
const flutterDir = join(work, "flutter-stand-in");
let s3: S3Server;
let daemon: Daemon;
let host: HostApiStandIn;
let owner = "";
let projectId = "";
let commit = "";
const runners: Subprocess[] = [];

async function sh(cmd: string, cwd = work): Promise<string> {
  const p = Bun.spawn(["bash", "-c", cmd], { cwd, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${cmd}: ${err}`);
  return out.trim();
}

/** A registered runner process with a work directory of its own. */
async function startRunner(name: string): Promise<{ proc: Subprocess; workDir: string }> {
  const created = (await http(daemon.url, "POST", "/v1/runners", { token: owner, body: { name } })).body;
  const workDir = join(work, `${name}-work`);
  // The tests run the daemon and the runner as one user: the documented override (docs/runners.md).
  const proc = Bun.spawn([BUN, ROOST, "runner", "--unsafe-allow-same-user"], {
    cwd: REPO_ROOT,
    env: {
      PATH: `${flutterDir}:${process.env.PATH}`,
      HOME: work,
      ROOST_URL: daemon.url,
      ROOST_RUNNER_ID: created.runner.id,
      ROOST_RUNNER_TOKEN: created.token,
      ROOST_RUNNER_WORKDIR: workDir,
      ROOST_RUNNER_GRACE_SECONDS: "1",
      ROOST_FLUTTER_GIT_URL: "file:///nonexistent/flutter.git",
    },
    stdout: "ignore",
    stderr: "ignore",
  });
  runners.push(proc);
  return { proc, workDir };
}

async function runBuild(pipelineId: string): Promise<{ build: any; log: string }> {
  const created = await http(daemon.url, "POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, commit_sha: commit } });
  if (created.status !== 201) throw new Error(JSON.stringify(created.body));
  const id = created.body.build.id;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const build = (await http(daemon.url, "GET", `/v1/builds/${id}`, { token: owner })).body.build;
    if (build.status !== "queued" && build.status !== "running") {
      const lines = (await http(daemon.url, "GET", `/v1/builds/${id}/logs`, { token: owner })).body as { text: string }[];
      return { build, log: lines.map((l) => l.text).join("\n") };
    }
    if (Date.now() > deadline) throw new Error(`build did not finish: ${JSON.stringify(build)}`);
    await Bun.sleep(100);
  }
}

beforeAll(async () => {
  mkdirSync(repo, { recursive: true });
  writeFileSync(join(repo, "pubspec.lock"), 'packages:\n  http:\n    version: "1.2.0"\n');
  await sh("git init -q -b main && git add . && git -c user.email=ci@example.test -c user.name=CI commit -q -m 'app'", repo);
  commit = await sh("git rev-parse HEAD", repo);
  mkdirSync(flutterDir);
  writeFileSync(join(flutterDir, "flutter"), '#!/bin/bash\necho "Flutter stand-in (tests): flutter $*"\n');
  chmodSync(join(flutterDir, "flutter"), 0o755);

  s3 = await startS3Server();
  daemon = await startDaemon({ env: { ...s3.env(), ROOST_RUNNER_LEASE_SECONDS: "4", ROOST_RUNNER_HEARTBEAT_SECONDS: "1" } });
  host = await startHostApiStandIn();
  host.github.repos.push({ id: 79, full_name: "acme/shared", default_branch: "main", private: true, clone_url: repo });
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
}, 60_000);

afterAll(async () => {
  for (const proc of runners) proc.kill("SIGKILL");
  await daemon?.stop();
  await host?.stop();
  await s3?.stop();
  rmSync(work, { recursive: true, force: true });
});

test("a cache one runner saved is restored by another runner, through the daemon's S3 store", async () => {
  // A "pub get" that downloads only what $PUB_CACHE does not hold yet.
  const fetchDeps =
    'mkdir -p "$PUB_CACHE/hosted" && if [ -f "$PUB_CACHE/hosted/http-1.2.0" ]; then echo "http 1.2.0: already in the cache"; else echo "http 1.2.0: downloading"; echo dep > "$PUB_CACHE/hosted/http-1.2.0"; fi';
  const created = await http(daemon.url, "POST", `/v1/projects/${projectId}/pipelines`, {
    token: owner,
    body: { name: "ci", execution_config: { commands: { pre_build: [fetchDeps] }, platforms: [], cache: { paths: ["$PUB_CACHE"] } } },
  });
  expect(created.status).toBe(201);
  const pipelineId = created.body.pipeline.id;

  const a = await startRunner("runner-a");
  const first = await runBuild(pipelineId);
  expect(first.build.status).toBe("succeeded");
  expect(first.log).toMatch(/^http 1.2.0: downloading$/m);
  expect(first.log).toMatch(/\[roost\] cache: saved [0-9a-f]{12}/);
  expect(first.log).toMatch(/\[roost\] cache: shared [0-9a-f]{12} with the project's runners/);
  expect((await s3.keys()).filter((k) => k.startsWith(`caches/${projectId}/`))).toHaveLength(1);
  a.proc.kill("SIGTERM");
  await a.proc.exited;

  const b = await startRunner("runner-b");
  expect(existsSync(join(b.workDir, "caches"))).toBe(false);
  const second = await runBuild(pipelineId);
  expect(second.build.status).toBe("succeeded");
  expect(second.log).toMatch(/\[roost\] cache: restored [0-9a-f]{12} of main \(exact key, from the shared cache, \d+ KiB\)/);
  expect(second.log).toContain("http 1.2.0: already in the cache");
  expect(second.log).not.toMatch(/^http 1.2.0: downloading$/m);
  expect(second.log).not.toContain("cache: saved");
  // Runner B keeps what it fetched on its own disk: its next build of this key needs no download.
  expect(existsSync(join(b.workDir, "caches", pipelineId))).toBe(true);
}, 120_000);
