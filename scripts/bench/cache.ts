// What the runner's dependency cache saves (docs/runners.md "Caches"): a real daemon and `roost
// runner`, a Flutter app repository with pubspec.lock and Gradle files, and the flutter stand-in
// (scripts/flutter-stand-in/flutter) on the runner's PATH simulating the pub and Gradle downloads
// (DOWNLOAD_SECONDS each, as FLUTTER_STAND_IN_DOWNLOAD_SECONDS). The same commit is built twice
// on a fresh runner: the first build downloads and saves the cache, the second restores it and
// skips the downloads. Times are wall clock from the build's creation to its success as the API
// reports it (polled every 50 ms)
// `bun run scripts/bench/cache.ts` prints the rows; scripts/bench.ts records them (scenario "cache").
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { http, startDaemon } from "../../tests/helpers/daemon.ts";
import { runnerEnv, spawnRunner } from "../../tests/helpers/ci-daemon.ts";
import { startHostApiStandIn } from "../../tests/support/host-api-stand-in.ts";
import { githubProject } from "./github.ts";
import { printRows, type BenchRow } from "./row.ts";

const ROOT = resolve(import.meta.dir, "../..");
const DOWNLOAD_SECONDS = Number(process.env.BENCH_CACHE_DOWNLOAD_SECONDS ?? 3);

async function sh(cmd: string, cwd: string): Promise<string> {
  const p = Bun.spawn(["bash", "-c", cmd], { cwd, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${cmd}: ${err}`);
  return out.trim();
}

export async function cacheRows(): Promise<BenchRow[]> {
  const work = mkdtempSync(join(tmpdir(), "roost-bench-cache-"));
  const repo = join(work, "app");
  const daemon = await startDaemon({ dataDir: join(work, "data"), env: { ROOST_LOG_LEVEL: "warn" } });
  const host = await startHostApiStandIn();
  let runner: ReturnType<typeof Bun.spawn> | undefined;
  try {
    mkdirSync(join(repo, "android", "app"), { recursive: true });
    writeFileSync(join(repo, "pubspec.lock"), 'packages:\n  http:\n    version: "1.2.0"\n');
    writeFileSync(join(repo, "android", "build.gradle"), "// top-level build file\n");
    writeFileSync(join(repo, "android", "app", "build.gradle"), "// app build file\n");
    await sh("git init -q -b main && git add . && git -c user.email=b@example.test -c user.name=Bench commit -q -m app", repo);
    const commit = await sh("git rev-parse HEAD", repo);
    host.github.repos.push({ id: 90, full_name: "bench/cache", default_branch: "main", private: true, clone_url: repo });
    const owner = (await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "bench@example.test" } })).body.session_token;
    const projectId = await githubProject(daemon, owner, host, "0123456789abcdef-secret");
    const created = (await http(daemon.url, "POST", "/v1/runners", { token: owner, body: { name: "bench" } })).body;
    runner = spawnRunner(["--unsafe-allow-same-user"], {
      PATH: `${join(ROOT, "scripts/flutter-stand-in")}:${process.env.PATH}`,
      HOME: work,
      ...runnerEnv(daemon.url, { id: created.runner.id, token: created.token }, join(work, "runner-work")),
    }).proc;
    const pipelineId = (
      await http(daemon.url, "POST", `/v1/projects/${projectId}/pipelines`, {
        token: owner,
        body: {
          name: "cache",
          execution_config: {
            env: [{ key: "FLUTTER_STAND_IN_DOWNLOAD_SECONDS", value: String(DOWNLOAD_SECONDS) }],
            commands: { pre_build: ["flutter pub get"] },
          },
        },
      })
    ).body.pipeline.id as string;
    const build = async (pipelineId: string) => {
      const t0 = performance.now();
      const id = (await http(daemon.url, "POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, commit_sha: commit } }))
        .body.build.id;
      for (;;) {
        const b = (await http(daemon.url, "GET", `/v1/builds/${id}`, { token: owner })).body.build;
        if (b.status === "succeeded") {
          const log = (await http(daemon.url, "GET", `/v1/builds/${id}/logs`, { token: owner })).body as { text: string }[];
          return { wall: (performance.now() - t0) / 1000, downloads: log.filter((l) => l.text.includes("downloading (simulated")).length };
        }
        if (b.status !== "queued" && b.status !== "running") throw new Error(`bench build ${b.status}: ${b.failure_reason}`);
        await Bun.sleep(50);
      }
    };
    const first = await build(pipelineId);
    const second = await build(pipelineId);
    if (first.downloads !== 2 || second.downloads !== 0)
      throw new Error(`downloads: ${first.downloads} in the first build, ${second.downloads} in the second (want 2 and 0)`);
    const scenario = `runner cache: the same commit built twice, pub and Gradle downloads of ${DOWNLOAD_SECONDS} s each (flutter stand-in)`;
    return [
      {
        scenario,
        metric: "second build, cache restored",
        roost: second.wall,
        baseline: first.wall,
        baselineName: "first build (downloads, saves the cache)",
        higherIsBetter: false,
        unit: "s",
      },
      {
        scenario,
        metric: "time saved by the cache",
        roost: first.wall - second.wall,
        baseline: 2 * DOWNLOAD_SECONDS,
        baselineName: "the simulated downloads",
        higherIsBetter: true,
        unit: "s",
      },
    ];
  } finally {
    runner?.kill();
    await runner?.exited;
    await daemon.stop();
    await host.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.main) printRows(await cacheRows());
