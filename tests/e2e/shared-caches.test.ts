// Dependency caches shared by every runner of a project (issue 24, docs/runners.md "Shared caches"):
// a real daemon on an S3-compatible bucket (tests/support/s3-server.ts) and two real runner
// processes with work directories of their own. Runner A builds, saves its cache and shares it
// through the daemon; runner B, which has never built the project, restores it from the bucket and
// finds the dependency in place instead of downloading it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { commitRepository, spawnHostRunner, startGithubProject, writeFlutterStandIn, type GithubProject, type RunnerProcess } from "../helpers/ci-daemon.ts";
import { startS3Server, type S3Server } from "../support/s3-server.ts";

const work = mkdtempSync(join(tmpdir(), "roost-shared-caches-e2e-"));
const repo = join(work, "app");
const flutterDir = join(work, "flutter-stand-in");
let s3: S3Server;
let ci: GithubProject;
let commit = "";
const runners: RunnerProcess[] = [];

/** A registered runner process with a work directory of its own. */
async function startRunner(name: string): Promise<RunnerProcess & { workDir: string }> {
  const registered = await ci.registerRunner({ name });
  const workDir = join(work, `${name}-work`);
  const runner = spawnHostRunner(ci.url, registered, { home: work, flutterDir, workDir });
  runners.push(runner);
  return { ...runner, workDir };
}

async function runBuild(pipelineId: string): Promise<{ build: any; log: string }> {
  const id = await ci.queueBuild(pipelineId, commit);
  return { build: await ci.waitForBuild(id, undefined, 60_000), log: await ci.buildLog(id) };
}

beforeAll(async () => {
  commit = await commitRepository(repo, { "pubspec.lock": 'packages:\n  http:\n    version: "1.2.0"\n' }, "app");
  writeFlutterStandIn(flutterDir);

  s3 = await startS3Server();
  ci = await startGithubProject({
    daemon: { env: { ...s3.env(), ROOST_RUNNER_LEASE_SECONDS: "4", ROOST_RUNNER_HEARTBEAT_SECONDS: "1" } },
    repository: { id: 79, full_name: "acme/shared", clone_url: repo },
  });
}, 60_000);

afterAll(async () => {
  for (const runner of runners) runner.proc.kill("SIGKILL");
  await ci?.stop();
  await s3?.stop();
  rmSync(work, { recursive: true, force: true });
});

test("a cache one runner saved is restored by another runner, through the daemon's S3 store", async () => {
  // A "pub get" that downloads only what $PUB_CACHE does not hold yet.
  const fetchDeps =
    'mkdir -p "$PUB_CACHE/hosted" && if [ -f "$PUB_CACHE/hosted/http-1.2.0" ]; then echo "http 1.2.0: already in the cache"; else echo "http 1.2.0: downloading"; echo dep > "$PUB_CACHE/hosted/http-1.2.0"; fi';
  const pipelineId = await ci.createPipeline({
    name: "ci",
    execution_config: { commands: { pre_build: [fetchDeps] }, platforms: [], cache: { paths: ["$PUB_CACHE"] } },
  });

  const a = await startRunner("runner-a");
  const first = await runBuild(pipelineId);
  expect(first.build.status).toBe("succeeded");
  expect(first.log).toMatch(/^http 1.2.0: downloading$/m);
  expect(first.log).toMatch(/\[roost\] cache: saved [0-9a-f]{12}/);
  expect(first.log).toMatch(/\[roost\] cache: shared [0-9a-f]{12} with the project's runners/);
  expect((await s3.keys()).filter((k) => k.startsWith(`caches/${ci.projectId}/`))).toHaveLength(1);
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
