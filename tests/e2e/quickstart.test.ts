// README's quick start, run exactly as written: its ```sh quickstart blocks, in order, in one
// bash, in a copy of this repository (so `npm ci` installs into the copy, not this checkout),
// with real npm, a real daemon, a real runner and real git. The only thing the test chooses is
// ROOST_LISTEN (a free port), which the quick start's first block takes from the environment as
// it tells the reader to (and, for the third run, ROOST_DATA_DIR). The build must end `succeeded`
// with its .apk, within the quick start's five minutes; after its last block the daemon's port is
// closed and no process is left.
//
// The blocks run three times: on a fresh checkout; again in the same checkout (the data, the
// sample's repository and the runner's registration are there from the first run); and on a data
// directory whose owner the web app's setup wizard made, with another e-mail. Each time they must
// succeed. A block that cannot go on must stop with a `quick start:` line saying what to do.
// The script runs with job control on (set -m), as the interactive shell a reader pastes into does.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { REPO_ROOT, freePort, http, startDaemon } from "../helpers/daemon.ts";
import { fencedBlocks } from "../helpers/markdown.ts";

const SECTION = "## Quick start: a first green build in five minutes";
const work = mkdtempSync(join(tmpdir(), "roost-quickstart-"));
const checkout = join(work, "roost");
const sessions: number[] = [];
let blocks: ReturnType<typeof fencedBlocks> = [];

afterAll(() => {
  // Whatever a script left running (each runs in a session of its own).
  for (const session of sessions) Bun.spawnSync(["pkill", "-KILL", "-s", String(session)]);
  rmSync(work, { recursive: true, force: true });
}, 60_000);

function run(cmd: string[], cwd = REPO_ROOT): string {
  const res = Bun.spawnSync(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  if (res.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${res.stderr.toString()}`);
  return res.stdout.toString();
}

async function portClosed(port: number): Promise<boolean> {
  try {
    await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1000) });
    return false;
  } catch {
    return true;
  }
}

beforeAll(() => {
  blocks = fencedBlocks(readFileSync(join(REPO_ROOT, "README.md"), "utf8"), SECTION).filter((b) => b.info[0] === "sh" && b.info.includes("quickstart"));
  // The repository as a reader has it: every file git tracks or would track (this tree's versions).
  for (const file of run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]).split("\0").filter(Boolean)) {
    if (!existsSync(join(REPO_ROOT, file))) continue;
    mkdirSync(dirname(join(checkout, file)), { recursive: true });
    copyFileSync(join(REPO_ROOT, file), join(checkout, file));
  }
  run(["chmod", "+x", join(checkout, "scripts/flutter-stand-in/flutter")]);
}, 60_000);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  elapsed: number;
  port: number;
  session: number;
}

/** Runs `code` as a bash script in the checkout, in a session of its own, with the reader's environment plus `env`. */
async function runScript(name: string, code: string, env: Record<string, string>): Promise<Omit<Run, "port">> {
  writeFileSync(join(work, name), code);
  const npmCache = run(["npm", "config", "get", "cache"]).trim();
  const home = join(work, "home");
  mkdirSync(home, { recursive: true });
  const started = Date.now();
  // setsid: the script and everything it starts form one session, whatever their process groups.
  const child = Bun.spawn(["setsid", "bash", join(work, name)], {
    cwd: checkout,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, npm_config_cache: npmCache, npm_config_update_notifier: "false", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  sessions.push(child.pid);
  const timer = setTimeout(() => Bun.spawnSync(["pkill", "-KILL", "-s", String(child.pid)]), 290_000);
  const [stdout, stderr, exit] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  clearTimeout(timer);
  return { code: exit, stdout, stderr, elapsed: Date.now() - started, session: child.pid };
}

/**
 * The blocks in order; before the last one (stop), the test reads the build, the caller and what
 * the run made with the session the quick start's `roost login` step got (which also shows that
 * step signed in).
 */
async function runQuickstart(env: Record<string, string> = {}): Promise<Run> {
  const observe = [
    `curl -fsS $ROOST_URL/v1/builds/$BUILD -H "$AUTH" > ../build.json`,
    `curl -fsS $ROOST_URL/v1/builds/$BUILD/artifacts -H "$AUTH" > ../artifacts.json`,
    `curl -fsS $ROOST_URL/v1/users/me -H "$AUTH" > ../me.json`,
    `curl -fsS "$ROOST_URL/v1/projects?limit=200" -H "$AUTH" > ../projects.json`,
    `curl -fsS "$ROOST_URL/v1/integrations" -H "$AUTH" > ../integrations.json`,
    `curl -fsS "$ROOST_URL/v1/runners" -H "$AUTH" > ../runners.json`,
  ].join("\n");
  // set -m: job control, as in the interactive shell a reader pastes into (each `&` job its own process group).
  const script = ["set -m -e -o pipefail", ...blocks.slice(0, -1).map((b) => b.code), observe, blocks.at(-1)!.code].join("\n");
  const port = freePort();
  const result = await runScript("quickstart.sh", script, { ROOST_LISTEN: `127.0.0.1:${port}`, ...env });
  return { ...result, port };
}

const logs = () =>
  ["roost.log", "runner.log"]
    .map((f) => (existsSync(join(checkout, f)) ? `--- ${f}\n${readFileSync(join(checkout, f), "utf8").slice(-4000)}` : `--- no ${f}`))
    .join("\n");
const readJson = (file: string) => JSON.parse(readFileSync(join(work, file), "utf8"));

/** What every successful run shows: the status line, the log, the build and its artifact, and nothing left running. */
async function expectGreen(r: Run): Promise<void> {
  if (r.code !== 0)
    throw new Error(`the quick start failed (exit ${r.code})\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-4000)}\n${logs()}`);
  expect(r.elapsed).toBeLessThan(300_000);
  expect(r.stderr).not.toContain("quick start:");

  // What the reader sees: the status line, then the build log.
  expect(r.stdout).toContain("\nsucceeded\n");
  const commit = run(["git", "rev-parse", "HEAD"], join(work, "hello-flutter")).trim();
  expect(r.stdout).toContain(`checked out ${commit} (Hello, Flutter)`);
  const build = readJson("build.json").build;
  expect(build).toMatchObject({ status: "succeeded", exit_code: 0, branch: "main", commit_sha: commit });
  expect(build.step_results.map((s: { name: string; status: string }) => [s.name, s.status])).toEqual([
    ["checkout", "succeeded"],
    ["pre_build", "succeeded"],
    ["build_android", "succeeded"],
  ]);
  const artifacts = readJson("artifacts.json").artifacts;
  expect(artifacts.map((a: { path: string }) => a.path)).toEqual(["build/app/outputs/flutter-apk/app-release.apk"]);
  const apk = readFileSync(join(work, "app-release.apk"), "utf8");
  expect(apk.length).toBe(artifacts[0].size);
  if (Bun.spawnSync(["sh", "-c", "command -v flutter"]).exitCode !== 0) {
    // The stand-in said what it is, in the log and in the file.
    expect(r.stdout).toContain("flutter stand-in: Running Gradle task 'assembleRelease'...");
    expect(apk).toBe(`placeholder apk written by scripts/flutter-stand-in for commit ${commit}; not an app\n`);
  }
  // The sample was copied once, never into itself.
  expect(existsSync(join(work, "hello-flutter", "hello-flutter"))).toBe(false);

  // The last block stopped the daemon and the runner.
  const deadline = Date.now() + 10_000;
  while (!(await portClosed(r.port)) && Date.now() < deadline) await Bun.sleep(200);
  expect(await portClosed(r.port)).toBe(true);
  // The runner stops within a few seconds (docs/runners.md: it tries 3 s to reach a Roost that
  // has gone); exited children nobody has reaped yet (state Z) are not running.
  const running = () =>
    Bun.spawnSync(["ps", "-o", "stat=", "-s", String(r.session)])
      .stdout.toString()
      .split("\n")
      .filter((st) => st.trim() && !st.startsWith("Z"));
  const stopBy = Date.now() + 10_000;
  while (running().length && Date.now() < stopBy) await Bun.sleep(250);
  if (running().length)
    throw new Error(`processes left after the quick start's last block: ${run(["ps", "-o", "pid,args", "-s", String(r.session)])}\n${logs()}`);
}

/** One of each thing the quick start makes, whichever run made it. */
function expectOneOfEach(): void {
  expect(readJson("projects.json").projects).toHaveLength(1);
  expect(readJson("integrations.json").integrations).toHaveLength(1);
  expect(readJson("runners.json").runners.map((r: { name: string }) => r.name)).toEqual(["this-machine"]);
}

describe("README's quick start, as written", () => {
  test("the blocks are there: the daemon started by npm first, stopped last", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(6);
    expect(blocks[0]!.code).toContain("npm ci");
    expect(blocks[0]!.code).toContain("npm start");
    expect(blocks.at(-1)!.code).toContain("kill");
  });

  test("on a fresh checkout it ends in a succeeded build with its artifact, in five minutes", async () => {
    const r = await runQuickstart();
    await expectGreen(r);
    expectOneOfEach();
    expect(readJson("me.json").user).toMatchObject({ email: "you@example.com", role: "owner" });
  }, 300_000);

  test("run a second time in the same checkout, every block works again: the same sample, project and runner, a new green build", async () => {
    const first = readJson("build.json").build;
    const r = await runQuickstart();
    await expectGreen(r);
    expect(r.stdout).toContain("../hello-flutter is a git repository already: building it as it is");
    expectOneOfEach();
    const second = readJson("build.json").build;
    expect(second.id).not.toBe(first.id);
    expect(second.project_id).toBe(first.project_id);
    expect(readJson("me.json").user).toMatchObject({ email: "you@example.com", role: "owner" });
  }, 300_000);

  test("after the web app's setup wizard made the owner with another e-mail, step 3 signs in with roost login and the build is green", async () => {
    const dataDir = join(work, "wizard-data");
    const wizard = await startDaemon({ dataDir, cleanup: false });
    try {
      // What the setup wizard sends in Local Only mode (web/pages/setup.tsx), from the browser on this machine.
      const owner = await http(wizard.url, "POST", "/v1/auth/local/login", { body: { email: "ada@example.test" }, headers: { origin: wizard.url } });
      expect(owner.status).toBe(200);
    } finally {
      await wizard.stop();
    }
    const r = await runQuickstart({ ROOST_DATA_DIR: dataDir });
    await expectGreen(r);
    expectOneOfEach();
    expect(readJson("me.json").user).toMatchObject({ email: "ada@example.test", role: "owner" });
  }, 300_000);

  test("with something already answering on its port, step 1 stops with a line saying what to do", async () => {
    const port = freePort();
    const other = Bun.serve({ hostname: "127.0.0.1", port, fetch: () => new Response("ok") });
    try {
      const r = await runScript("step1.sh", ["set -m -e -o pipefail", blocks[0]!.code].join("\n"), { ROOST_LISTEN: `127.0.0.1:${port}` });
      expect(r.code).not.toBe(0);
      expect(r.stderr.trim()).toBe(
        `quick start: something already answers at http://127.0.0.1:${port}: stop it (step 8), or set ROOST_LISTEN to a free port, then run this step again`,
      );
    } finally {
      other.stop(true);
    }
  }, 60_000);
});
