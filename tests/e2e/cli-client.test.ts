// The user commands of `roost` (docs/cli.md) as real processes against a real daemon and a real
// runner building a local git repository: listing, starting and following a build to its end with
// the build's result as exit code, cancel, re-run, artifact download with its SHA-256 checked,
// --json shapes, --help everywhere, a log stream cut mid-build and resumed, and the config file's
// mode check.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Socket, Subprocess } from "bun";
import { BUN, ROOST, http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import {
  commitRepository,
  loginOwner,
  projectClient,
  spawnHostRunner,
  WRITE_APK,
  writeFlutterStandIn,
  type ProjectClient,
  type RunnerProcess,
} from "../helpers/ci-daemon.ts";

const work = mkdtempSync(join(tmpdir(), "roost-cli-client-"));
const repo = join(work, "app");
const flutterDir = join(work, "flutter-stand-in");
let daemon: Daemon;
let ci: ProjectClient;
let runnerProc: RunnerProcess | undefined;
let apiToken = "";
let commit = "";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `roost <args>` as a user runs it: only PATH, HOME and the given variables (ROOST_URL and ROOST_TOKEN unless replaced). */
function spawnRoost(
  args: string[],
  env: Record<string, string | undefined> = {},
  cwd = work,
): { child: Subprocess<"ignore", "pipe", "pipe">; done: Promise<Run> } {
  const merged = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: work, ROOST_URL: daemon.url, ROOST_TOKEN: apiToken, ...env };
  const child = Bun.spawn([BUN, ROOST, ...args], {
    env: Object.fromEntries(Object.entries(merged).filter(([, v]) => v !== undefined)) as Record<string, string>,
    cwd,
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 50_000);
  const done = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]).then(([stdout, stderr, code]) => {
    clearTimeout(timer);
    return { code, stdout, stderr };
  });
  return { child, done };
}

const roost = (args: string[], env: Record<string, string | undefined> = {}, cwd = work) => spawnRoost(args, env, cwd).done;

const pipeline = (name: string, commands: Record<string, string[]>) => ci.createPipeline({ name, execution_config: { commands } });
const waitFor = (id: string, predicate: (b: any) => boolean, timeoutMs = 30_000) => ci.waitForBuild(id, predicate, timeoutMs);

const jsonLines = (stdout: string) =>
  stdout
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l));

beforeAll(async () => {
  commit = await commitRepository(repo, { "README.md": "# app\n", "lib/main.dart": "void main() {}\n" });
  // A flutter that writes an .apk.
  writeFlutterStandIn(flutterDir, WRITE_APK);

  daemon = await startDaemon({
    dataDir: join(work, "data"),
    cleanup: false,
    env: { ROOST_RUNNER_LEASE_SECONDS: "4", ROOST_RUNNER_HEARTBEAT_SECONDS: "1", ROOST_GIT_ALLOW_LOCAL_REMOTES: "true" },
  });
  const owner = await loginOwner(daemon.url);
  const integration = await http(daemon.url, "POST", "/v1/integrations", { token: owner, body: { provider: "git", name: "app", url: repo } });
  if (integration.status !== 201) throw new Error(JSON.stringify(integration.body));
  const repoId = (await http(daemon.url, "GET", "/v1/integration-repositories", { token: owner })).body.repositories[0].id;
  const projectId = (await http(daemon.url, "POST", "/v1/projects", { token: owner, body: { repository_id: repoId, name: "app" } })).body.project.id;
  apiToken = (await http(daemon.url, "POST", "/v1/api-tokens", { token: owner, body: { name: "cli", role: "developer" } })).body.token;
  ci = projectClient(daemon.url, owner, projectId);
  const runner = await ci.registerRunner({ name: "linux-cli" });
  runnerProc = spawnHostRunner(daemon.url, runner, { home: work, flutterDir });
}, 60_000);

afterAll(async () => {
  runnerProc?.proc.kill("SIGKILL");
  await daemon?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("roost project, pipeline and build: listing", () => {
  test("project list: a table, and with --json the API's body", async () => {
    const human = await roost(["project", "list"]);
    expect(human.code).toBe(0);
    expect(human.stderr).toBe("");
    const [header, row, ...rest] = human.stdout.trimEnd().split("\n");
    expect(header!.split(/\s+/)).toEqual(["ID", "NAME", "REPOSITORY", "BRANCH", "ROLE"]);
    const project = (await http(daemon.url, "GET", "/v1/projects", { token: apiToken })).body.projects[0];
    expect(row!.split(/\s+/)).toEqual([ci.projectId, "app", project.repository_full_name, "main", project.current_user_role]);
    expect(rest).toEqual([]);

    const json = await roost(["project", "list", "--json"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual((await http(daemon.url, "GET", "/v1/projects?limit=200", { token: apiToken })).body);
    expect(JSON.parse(json.stdout)).toMatchObject({ total: 1, projects: [{ id: ci.projectId, name: "app", default_branch: "main" }] });
  });

  test("pipeline list takes the project's name as well as its id", async () => {
    const id = await pipeline("listed", { build: ["true"] });
    const byName = await roost(["pipeline", "list", "app", "--json"]);
    const byId = await roost(["pipeline", "list", ci.projectId, "--json"]);
    expect(byName.code).toBe(0);
    expect(byName.stdout).toBe(byId.stdout);
    expect(JSON.parse(byName.stdout).pipelines.map((p: { id: string; name: string }) => [p.id, p.name])).toContainEqual([id, "listed"]);
  });
});

describe("roost build start --follow: the log live, and the build's result as exit code", () => {
  test("a succeeding build: every line once, in order, under its step; exit 0", async () => {
    await pipeline("green", { pre_build: ["echo preparing $ROOST_COMMIT_SHA"], build: ["for i in 1 2 3; do echo line $i; sleep 0.2; done"] });
    const res = await roost(["build", "start", "app", "--pipeline", "green", "--follow"]);
    expect(res.code).toBe(0);
    const lines = res.stdout.trimEnd().split("\n");
    expect(lines).toContain(`preparing ${commit}`);
    const at = lines.indexOf("line 1");
    expect(lines.slice(at, at + 3)).toEqual(["line 1", "line 2", "line 3"]);
    expect(lines.filter((l) => l === "line 2")).toHaveLength(1);
    expect(lines.indexOf("==> build")).toBeLessThan(at);
    expect(lines.indexOf("==> pre_build")).toBeLessThan(lines.indexOf(`preparing ${commit}`));
    expect(res.stderr).toMatch(/^roost: started build #\d+ \w+\n/);
    expect(res.stderr).toMatch(/roost: build #\d+ succeeded \(\d+ s\)\n$/);
  }, 40_000);

  test("a failing build exits 1; --json prints the build, every log line as an event, then the final build", async () => {
    await pipeline("red", { build: ["echo about to fail", "exit 7"] });
    const res = await roost(["build", "start", ci.projectId, "--pipeline", "red", "--follow", "--json"]);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe("");
    const events = jsonLines(res.stdout);
    expect(events[0]).toMatchObject({ event: "build", build: { status: "queued", commit_sha: commit, branch: "main", trigger_type: "manual" } });
    const logs = events.filter((e) => e.event === "log");
    expect(logs.map((l) => l.seq)).toEqual(logs.map((_, i) => i + 1));
    expect(logs.find((l) => l.text === "about to fail")).toMatchObject({
      event: "log",
      step: "build",
      stream: "stdout",
      ts: expect.any(Number),
      seq: expect.any(Number),
    });
    expect(events.some((e) => e.event === "status" && e.status === "running")).toBe(true);
    const last = events[events.length - 1];
    expect(last).toMatchObject({
      event: "end",
      build: { id: events[0].build.id, status: "failed", exit_code: 7, failure_reason: "step build failed with exit code 7" },
    });
    expect(Object.keys(last)).toEqual(["event", "build"]);
  }, 40_000);

  test("follow of a finished build prints its whole log and exits with its result", async () => {
    const { builds } = (await http(daemon.url, "GET", `/v1/projects/${ci.projectId}/builds?status=failed`, { token: ci.owner })).body;
    const res = await roost(["build", "follow", builds[0].id]);
    expect(res.code).toBe(1);
    expect(res.stdout).toContain("==> build\n$ echo about to fail\nabout to fail\n$ exit 7\n");
    expect(res.stderr).toBe(
      `roost: build #${builds[0].build_number} failed: step build failed with exit code 7 (${builds[0].finished_at - builds[0].started_at} s)\n`,
    );
  }, 30_000);

  test("build list and show: the builds so far, newest first", async () => {
    const json = JSON.parse((await roost(["build", "list", "app", "--json"])).stdout);
    expect(json.builds.length).toBeGreaterThanOrEqual(2);
    expect(json.next_cursor).toBeNull();
    expect(json.builds.map((b: { build_number: number }) => b.build_number)).toEqual(
      [...json.builds.map((b: { build_number: number }) => b.build_number)].sort((a, b) => b - a),
    );
    const failed = await roost(["build", "list", "app", "--status", "failed", "--pipeline", "red"]);
    expect(failed.code).toBe(0);
    const rows = failed.stdout.trimEnd().split("\n");
    expect(rows[0]!.split(/\s+/)).toEqual(["ID", "#", "STATUS", "BRANCH", "COMMIT", "TRIGGER", "CREATED", "DURATION"]);
    expect(rows).toHaveLength(2);
    expect(rows[1]).toContain(` failed  main    ${commit.slice(0, 7)}  manual `);
    const show = await roost(["build", "show", json.builds.find((b: any) => b.status === "failed").id]);
    expect(show.stdout).toContain("failure  step build failed with exit code 7\n");
    expect(show.stdout).toMatch(/\nSTEP +STATUS +EXIT +DURATION\n/);
    expect(show.stdout).toMatch(/\nbuild +failed +7 +\d+\.\d s\n/);
  }, 30_000);
});

describe("cancel and re-run", () => {
  test("cancel ends a followed build: the follower exits 3, and a second cancel is refused with exit 4", async () => {
    await pipeline("slow", { build: ["echo started slow", "sleep 30", "echo never"] });
    const started = await roost(["build", "start", "app", "--pipeline", "slow", "--json"]);
    expect(started.code).toBe(0);
    const { build } = JSON.parse(started.stdout);
    expect(build.status).toBe("queued");
    const follower = spawnRoost(["build", "follow", build.id]);
    await waitFor(build.id, (b) => b.step_results.some((s: { name: string; status: string }) => s.name === "build" && s.status === "running"));
    const canceled = await roost(["build", "cancel", build.id]);
    expect(canceled).toEqual({ code: 0, stdout: `build #${build.build_number} ${build.id}: canceled\n`, stderr: "" });
    const followed = await follower.done;
    expect(followed.code).toBe(3);
    expect(followed.stdout).toContain("started slow\n");
    expect(followed.stdout).not.toContain("never\n");
    expect(followed.stderr).toContain(`roost: build #${build.build_number} canceled (`);

    const again = await roost(["build", "cancel", build.id]);
    expect(again).toEqual({
      code: 4,
      stdout: "",
      stderr: `roost: build_not_cancelable: Build #${build.build_number} is canceled; only queued or running builds can be canceled.\n`,
    });
  }, 60_000);

  test("rerun --follow builds the same commit again and exits with the new build's result", async () => {
    const { builds } = (await http(daemon.url, "GET", `/v1/projects/${ci.projectId}/builds?status=succeeded`, { token: ci.owner })).body;
    const source = builds[0];
    const res = await roost(["build", "rerun", source.id, "--follow", "--json"]);
    expect(res.code).toBe(0);
    const events = jsonLines(res.stdout);
    expect(events[0].build).toMatchObject({ source_build_id: source.id, commit_sha: source.commit_sha, trigger_type: "rerun" });
    expect(events[events.length - 1].build).toMatchObject({ id: events[0].build.id, status: "succeeded" });
  }, 40_000);
});

describe("roost build download", () => {
  let buildId = "";
  const expected = () => `fake apk for ${commit}`;

  beforeAll(async () => {
    const { builds } = (await http(daemon.url, "GET", `/v1/projects/${ci.projectId}/builds?status=succeeded`, { token: ci.owner })).body;
    buildId = builds[0].id;
  });

  test("streams each artifact to disk under its file name and checks its SHA-256", async () => {
    const dir = join(work, "downloads");
    const res = await roost(["build", "download", buildId, "--dir", dir]);
    const sha = new Bun.CryptoHasher("sha256").update(expected()).digest("hex");
    expect(res).toEqual({ code: 0, stdout: `${join(dir, "app-release.apk")}  ${expected().length} bytes  sha256 ${sha} ok\n`, stderr: "" });
    expect(readFileSync(join(dir, "app-release.apk"), "utf8")).toBe(expected());
    expect(readdirSync(dir)).toEqual(["app-release.apk"]);

    const json = await roost(["build", "download", buildId, "--dir", dir, "--keep-paths", "--match", "**/*.apk", "--json"]);
    expect(json.code).toBe(0);
    const file = join(dir, "build/app/outputs/flutter-apk/app-release.apk");
    expect(JSON.parse(json.stdout)).toEqual({
      artifacts: [
        {
          id: expect.any(String),
          build_id: buildId,
          path: "build/app/outputs/flutter-apk/app-release.apk",
          size: expected().length,
          sha256: sha,
          created_at: expect.any(Number),
          file,
        },
      ],
    });
    expect(readFileSync(file, "utf8")).toBe(expected());
  }, 30_000);

  test("nothing matching --match exits 4", async () => {
    const res = await roost(["build", "download", buildId, "--match", "**/*.ipa", "--dir", join(work, "none")]);
    expect(res).toEqual({ code: 4, stdout: "", stderr: `roost: build ${buildId} has no artifacts matching '**/*.ipa' (it has 1)\n` });
    expect(existsSync(join(work, "none"))).toBe(false);
  });

  test("a stored artifact that no longer matches its recorded SHA-256 exits 6 and leaves no file", async () => {
    const { artifacts } = (await http(daemon.url, "GET", `/v1/builds/${buildId}/artifacts`, { token: ci.owner })).body;
    const stored = join(daemon.dataDir, "artifacts", buildId, artifacts[0].id);
    const original = readFileSync(stored);
    // Same size, one byte changed: what a bad disk sector or a tampered file looks like.
    writeFileSync(stored, Buffer.concat([Buffer.from("F"), original.subarray(1)]));
    try {
      const dir = join(work, "corrupt");
      mkdirSync(dir);
      const res = await roost(["build", "download", buildId, "--dir", dir]);
      const got = new Bun.CryptoHasher("sha256").update("F" + expected().slice(1)).digest("hex");
      expect(res).toEqual({
        code: 6,
        stdout: "",
        stderr: `roost: build/app/outputs/flutter-apk/app-release.apk: checksum mismatch: Roost recorded sha256 ${artifacts[0].sha256} (${expected().length} bytes), the download has ${got} (${expected().length} bytes); nothing was written\n`,
      });
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      writeFileSync(stored, original);
    }
  });
});

/** A TCP proxy in front of the daemon that cuts the first log stream after its first log event. */
function cuttingProxy(target: URL): { url: string; cuts: () => number; stop(): void } {
  let cuts = 0;
  type State = { upstream: Socket<undefined> | null; pending: Uint8Array[]; stream: boolean };
  const server = Bun.listen<State>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        client.data = { upstream: null, pending: [], stream: false };
        void Bun.connect({
          hostname: target.hostname,
          port: Number(target.port),
          socket: {
            data(_up, chunk) {
              client.write(chunk);
              if (client.data.stream && cuts === 0 && Buffer.from(chunk).toString().includes("event: log")) {
                cuts += 1;
                client.end();
                _up.end();
              }
            },
            close() {
              client.end();
            },
          },
        }).then((upstream) => {
          client.data.upstream = upstream;
          for (const chunk of client.data.pending) upstream.write(chunk);
        });
      },
      data(client, chunk) {
        if (Buffer.from(chunk).toString().includes("/logs/stream")) client.data.stream = true;
        if (client.data.upstream) client.data.upstream.write(chunk);
        else client.data.pending.push(new Uint8Array(chunk));
      },
      close(client) {
        client.data.upstream?.end();
      },
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, cuts: () => cuts, stop: () => server.stop(true) };
}

describe("a dropped log stream", () => {
  test("is resumed with a fresh stream token after the last line seen: every line once, in order", async () => {
    await pipeline("cut", { build: ["echo one", "sleep 1", "echo two", "sleep 1", "echo three"] });
    const proxy = cuttingProxy(new URL(daemon.url));
    try {
      const res = await roost(["build", "start", "app", "--pipeline", "cut", "--follow", "--json"], { ROOST_URL: proxy.url });
      expect(proxy.cuts()).toBe(1);
      expect(res.code).toBe(0);
      expect(res.stderr).toMatch(/^roost: the log stream dropped \(.+\); reconnecting \(attempt 1\)\n$/);
      const events = jsonLines(res.stdout);
      const logs = events.filter((e) => e.event === "log");
      expect(logs.map((l) => l.seq)).toEqual(logs.map((_, i) => i + 1));
      const texts = logs.map((l) => l.text);
      expect(texts.filter((t) => ["one", "two", "three"].includes(t))).toEqual(["one", "two", "three"]);
      // Compared with the log the daemon kept: nothing lost, nothing twice.
      const stored = (await fetch(`${daemon.url}/v1/builds/${events[0].build.id}/logs`, { headers: { authorization: `Bearer ${ci.owner}` } }).then((r) =>
        r.json(),
      )) as { seq: number; text: string }[];
      expect(logs.map((l) => [l.seq, l.text])).toEqual(stored.map((l) => [l.seq, l.text]));
    } finally {
      proxy.stop();
    }
  }, 40_000);
});

describe("where the commands find Roost", () => {
  test("a config file readable by others is refused (exit 2) before any request; mode 0600 is used", async () => {
    const home = join(work, "home");
    const file = join(home, ".config/roost/config.json");
    mkdirSync(join(home, ".config/roost"), { recursive: true });
    writeFileSync(file, JSON.stringify({ url: daemon.url, token: apiToken }));
    chmodSync(file, 0o644);
    const env = { HOME: home, ROOST_URL: undefined, ROOST_TOKEN: undefined };
    expect(await roost(["project", "list"], env)).toEqual({
      code: 2,
      stdout: "",
      stderr: `roost: ${file} holds an API token but its group or others may access it (mode 0644); run 'chmod 600 ${file}'\n`,
    });
    chmodSync(file, 0o640);
    expect((await roost(["project", "list"], env)).code).toBe(2);
    chmodSync(file, 0o600);
    const ok = await roost(["project", "list", "--json"], env);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout).projects[0].id).toBe(ci.projectId);
    // ROOST_CONFIG names another file; the environment wins over the file, field by field.
    const other = join(work, "other.json");
    writeFileSync(other, JSON.stringify({ url: "http://127.0.0.1:9", token: apiToken }), { mode: 0o600 });
    expect((await roost(["project", "list"], { HOME: home, ROOST_CONFIG: other, ROOST_TOKEN: undefined })).code).toBe(0);
  });

  test.each([
    [{ ROOST_URL: undefined }, 'roost: no ROOST_URL; set ROOST_URL, or write {"url": …, "token": …} to CONFIG (mode 0600); see \'roost build --help\''],
    [
      { ROOST_URL: undefined, ROOST_TOKEN: undefined },
      'roost: no ROOST_URL and ROOST_TOKEN; set ROOST_URL and ROOST_TOKEN, or write {"url": …, "token": …} to CONFIG (mode 0600); see \'roost build --help\'',
    ],
    [{ ROOST_URL: "ftp://example.test" }, "roost: ROOST_URL must be http:// or https://, not 'ftp://example.test'"],
  ])("missing or wrong settings exit 2: %p", async (env, message) => {
    const res = await roost(["build", "list", "app"], env);
    expect(res).toEqual({ code: 2, stdout: "", stderr: message.replace("CONFIG", join(work, ".config/roost/config.json")) + "\n" });
  });

  test("a wrong token exits 4 with the API's code; an unreachable Roost exits 5", async () => {
    const wrong = await roost(["project", "list"], { ROOST_TOKEN: "roost_pat_nothing" });
    expect(wrong.code).toBe(4);
    expect(wrong.stderr).toMatch(/^roost: \w+: .+ \(check ROOST_TOKEN or the config file's token\)\n$/);
    const port = (() => {
      const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
      const p = s.port!;
      s.stop(true);
      return p;
    })();
    const down = await roost(["project", "list"], { ROOST_URL: `http://127.0.0.1:${port}` });
    expect(down).toEqual({ code: 5, stdout: "", stderr: `roost: cannot reach Roost at http://127.0.0.1:${port} (ECONNREFUSED)\n` });
    expect(await roost(["build", "show", "no-such-build"])).toEqual({ code: 4, stdout: "", stderr: expect.stringMatching(/^roost: not_found: .+\n$/) });
  });
});

describe("--help and usage errors", () => {
  const actions: [string, string][] = [
    ["project", "list"],
    ["pipeline", "list"],
    ...["list", "show", "start", "follow", "cancel", "rerun", "artifacts", "download"].map((a): [string, string] => ["build", a]),
  ];

  test.each(actions)("roost %s %s --help: usage, connection and exit codes, exit 0, with no configuration", async (group, action) => {
    const res = await roost([group, action, "--help"], { ROOST_URL: undefined, ROOST_TOKEN: undefined });
    expect(res.code).toBe(0);
    expect(res.stderr).toBe("");
    expect(res.stdout).toStartWith(`Usage: roost ${group} ${action}`);
    expect(res.stdout).toContain("ROOST_TOKEN");
    expect(res.stdout).toContain("Exit codes: 0 done (a followed build succeeded) · 1 the followed build failed · 2 usage or");
  });

  test.each([["project"], ["pipeline"], ["build"]])("roost %s --help lists its actions", async (group) => {
    const res = await roost([group, "--help"]);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain(`roost ${group} list`);
  });

  test("roost --help names the user commands", async () => {
    const res = await roost(["--help"]);
    expect(res.stdout).toContain("build <action>        list, show, start, follow, cancel, rerun, publish, artifacts, download");
  });

  test.each([
    [["build", "start", "app", "--pipline", "x"], "roost build start: unknown option '--pipline'; see 'roost build start --help'"],
    [["build", "start", "app"], "roost build start: missing --pipeline; see 'roost build start --help'"],
    [["build", "follow"], "roost build follow: missing <build>; see 'roost build follow --help'"],
    [["build", "list", "app", "--status", "done"], "roost build list: --status must be one of queued, running, succeeded, failed, canceled, not 'done'"],
    [["build", "list", "app", "--limit", "0"], "roost build list: --limit must be a whole number from 1 to 200, not '0'"],
    [["build", "download", "x", "--dir"], "roost build download: option '--dir' needs a value; see 'roost build download --help'"],
    [["build"], "roost build: missing action (list, show, start, follow, cancel, rerun, publish, artifacts, download); see 'roost build --help'"],
    [
      ["build", "watch"],
      "roost build: unknown action 'watch' (list, show, start, follow, cancel, rerun, publish, artifacts, download); see 'roost build --help'",
    ],
    [["project", "list", "--all"], "roost project list: unknown option '--all'; see 'roost project list --help'"],
  ])("roost %p exits 2 with one line", async (args, message) => {
    expect(await roost(args)).toEqual({ code: 2, stdout: "", stderr: message + "\n" });
  });
});
