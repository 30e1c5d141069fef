// README's quick start, run exactly as written: its ```sh quickstart blocks, in order, in one
// bash, in a copy of this repository (so `npm ci` installs into the copy, not this checkout),
// with real npm, a real daemon, a real runner and real git. The only thing the test chooses is
// ROOST_LISTEN (a free port), which the quick start's first block takes from the environment as
// it tells the reader to. The build must end `succeeded` with its .apk, within the quick start's
// five minutes; after its last block the daemon's port is closed and no process is left.
// The script runs with job control on (set -m), as the interactive shell a reader pastes into does.
import { afterAll, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { REPO_ROOT } from "../helpers/daemon.ts";
import { fencedBlocks } from "../helpers/markdown.ts";

const SECTION = "## Quick start: a first green build in five minutes";
const work = mkdtempSync(join(tmpdir(), "roost-quickstart-"));
const checkout = join(work, "roost");
let session = 0;

afterAll(() => {
  // Whatever the script left running (it runs in a session of its own).
  if (session) Bun.spawnSync(["pkill", "-KILL", "-s", String(session)]);
  rmSync(work, { recursive: true, force: true });
});

function run(cmd: string[], cwd = REPO_ROOT): string {
  const res = Bun.spawnSync(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  if (res.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${res.stderr.toString()}`);
  return res.stdout.toString();
}

function freePort(): number {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  return port;
}

async function portClosed(port: number): Promise<boolean> {
  try {
    await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1000) });
    return false;
  } catch {
    return true;
  }
}

test("README's quick start, as written, ends in a succeeded build with its artifact, in five minutes", async () => {
  const blocks = fencedBlocks(readFileSync(join(REPO_ROOT, "README.md"), "utf8"), SECTION).filter((b) => b.info[0] === "sh" && b.info.includes("quickstart"));
  expect(blocks.length).toBeGreaterThanOrEqual(6);
  expect(blocks[0]!.code).toContain("npm ci");
  expect(blocks[0]!.code).toContain("npm start");
  expect(blocks.at(-1)!.code).toContain("kill");

  // The repository as a reader has it: every file git tracks or would track (this tree's versions).
  for (const file of run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]).split("\0").filter(Boolean)) {
    if (!existsSync(join(REPO_ROOT, file))) continue;
    mkdirSync(dirname(join(checkout, file)), { recursive: true });
    copyFileSync(join(REPO_ROOT, file), join(checkout, file));
  }
  run(["chmod", "+x", join(checkout, "scripts/flutter-stand-in/flutter")]);

  // The blocks in order; before the last one (stop), the test reads the build with the session
  // the quick start's `roost login` step got, which also shows that step signed in.
  const observe = `curl -fsS $ROOST_URL/v1/builds/$BUILD -H "$AUTH" > ../build.json\ncurl -fsS $ROOST_URL/v1/builds/$BUILD/artifacts -H "$AUTH" > ../artifacts.json\n`;
  // set -m: job control, as in the interactive shell a reader pastes into (each `&` job its own process group).
  const script = ["set -m -e -o pipefail", ...blocks.slice(0, -1).map((b) => b.code), observe, blocks.at(-1)!.code].join("\n");
  writeFileSync(join(work, "quickstart.sh"), script);

  const port = freePort();
  const npmCache = run(["npm", "config", "get", "cache"]).trim();
  const home = join(work, "home");
  mkdirSync(home);
  const flutterInstalled = Bun.spawnSync(["sh", "-c", "command -v flutter"]).exitCode === 0;
  const started = Date.now();
  // setsid: the script and everything it starts form one session, whatever their process groups.
  const child = Bun.spawn(["setsid", "bash", join(work, "quickstart.sh")], {
    cwd: checkout,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, ROOST_LISTEN: `127.0.0.1:${port}`, npm_config_cache: npmCache, npm_config_update_notifier: "false" },
    stdout: "pipe",
    stderr: "pipe",
  });
  session = child.pid;
  const timer = setTimeout(() => Bun.spawnSync(["pkill", "-KILL", "-s", String(session)]), 290_000);
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  clearTimeout(timer);
  const elapsed = Date.now() - started;
  const logs = () => ["roost.log", "runner.log"].map((f) => (existsSync(join(checkout, f)) ? `--- ${f}\n${readFileSync(join(checkout, f), "utf8").slice(-4000)}` : `--- no ${f}`)).join("\n");
  if (code !== 0) throw new Error(`the quick start failed (exit ${code})\n--- stdout\n${stdout.slice(-4000)}\n--- stderr\n${stderr.slice(-4000)}\n${logs()}`);
  expect(elapsed).toBeLessThan(300_000);

  // What the reader sees: the status line, then the build log.
  expect(stdout).toContain("\nsucceeded\n");
  const commit = run(["git", "rev-parse", "HEAD"], join(work, "hello-flutter")).trim();
  expect(stdout).toContain(`checked out ${commit} (Hello, Flutter)`);
  const build = JSON.parse(readFileSync(join(work, "build.json"), "utf8")).build;
  expect(build).toMatchObject({ status: "succeeded", exit_code: 0, branch: "main", commit_sha: commit });
  expect(build.step_results.map((s: { name: string; status: string }) => [s.name, s.status])).toEqual([
    ["checkout", "succeeded"],
    ["pre_build", "succeeded"],
    ["build_android", "succeeded"],
  ]);
  const artifacts = JSON.parse(readFileSync(join(work, "artifacts.json"), "utf8")).artifacts;
  expect(artifacts.map((a: { path: string }) => a.path)).toEqual(["build/app/outputs/flutter-apk/app-release.apk"]);
  const apk = readFileSync(join(work, "app-release.apk"), "utf8");
  expect(apk.length).toBe(artifacts[0].size);
  if (!flutterInstalled) {
    // The stand-in said what it is, in the log and in the file.
    expect(stdout).toContain("flutter stand-in: Running Gradle task 'assembleRelease'...");
    expect(apk).toBe(`placeholder apk written by scripts/flutter-stand-in for commit ${commit}; not an app\n`);
  }

  // The last block stopped the daemon and the runner.
  const deadline = Date.now() + 10_000;
  while (!(await portClosed(port)) && Date.now() < deadline) await Bun.sleep(200);
  expect(await portClosed(port)).toBe(true);
  // The runner stops within a few seconds (docs/runners.md: it tries 3 s to reach a Roost that
  // has gone); exited children nobody has reaped yet (state Z) are not running.
  const running = () => Bun.spawnSync(["ps", "-o", "stat=", "-s", String(session)]).stdout.toString().split("\n").filter((st) => st.trim() && !st.startsWith("Z"));
  const stopBy = Date.now() + 10_000;
  while (running().length && Date.now() < stopBy) await Bun.sleep(250);
  if (running().length) throw new Error(`processes left after the quick start's last block: ${run(["ps", "-o", "pid,args", "-s", String(session)])}\n${logs()}`);
}, 300_000);
