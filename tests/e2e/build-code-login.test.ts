// Build code must never act as a Roost user (issue 10). A real daemon in Local Only mode, a real
// `roost runner` as another OS user on the same host (the documented setup), and a build whose
// step tries what a pull request's code would: a loopback local login as the owner, and minting a
// capability over the management socket. Both fail; no session is created. Also: `roost login`
// over the real Unix socket, and the runner's refusal to run builds as the daemon's own user.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { BUN, REPO_ROOT, ROOST, freePort, http, type Daemon } from "../helpers/daemon.ts";
import { commitRepository, sh as shIn, startGithubProject, type GithubProject } from "../helpers/ci-daemon.ts";
import { openDatabase } from "../../lib/db/client.ts";

// The tests run as root; the runner runs as `nobody`, as `sudo -u roost-runner roost runner` would.
const OTHER_UID = 65534;
const work = mkdtempSync(join(tmpdir(), "roost-build-code-login-"));
const repo = join(work, "app");
const runnerHome = join(work, "runner-home");
let ci: GithubProject;
let daemon: Daemon;
let commit = "";
// Two registered runners, each with its own label, so that each build goes to the runner meant for it.
const runners: Record<"other" | "same", { id: string; token: string }> = { other: { id: "", token: "" }, same: { id: "", token: "" } };
const running: Subprocess[] = [];

const sh = (cmd: string) => shIn(cmd, work);

/** `roost <args>` as another OS user (setpriv, util-linux), with the daemon's configuration. */
function asOtherUser(args: string[], env: Record<string, string>): Subprocess<"ignore", "pipe", "pipe"> {
  return Bun.spawn(["setpriv", `--reuid=${OTHER_UID}`, `--regid=${OTHER_UID}`, "--clear-groups", BUN, ROOST, ...args], {
    cwd: REPO_ROOT,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
}

function runnerEnv(which: "other" | "same"): Record<string, string> {
  const home = which === "other" ? runnerHome : work;
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    ROOST_URL: daemon.url,
    ROOST_RUNNER_ID: runners[which].id,
    ROOST_RUNNER_TOKEN: runners[which].token,
    ROOST_RUNNER_WORKDIR: join(home, "runner-work"),
  };
}

async function sessions(): Promise<number> {
  const db = await openDatabase(`file:${join(daemon.dataDir, "roost.db")}`);
  try {
    return Number((await db.execute("SELECT count(*) AS n FROM sessions")).rows[0]!.n);
  } finally {
    db.close();
  }
}

async function finishedBuild(which: "other" | "same", commands: string[], env: { key: string; value: string }[] = []): Promise<{ build: any; log: string }> {
  const pipelineId = await ci.createPipeline({
    execution_config: { env, runner_labels: [which], platform_commands: { android: "echo no flutter needed" }, commands: { build: commands } },
  });
  const buildId = await ci.queueBuild(pipelineId, commit);
  return { build: await ci.waitForBuild(buildId), log: await ci.buildLog(buildId) };
}

/** SIGKILL: a runner stopping with SIGTERM finishes its current long poll first (up to 20 s). */
async function stopRunners(): Promise<void> {
  for (const p of running.splice(0)) {
    p.kill("SIGKILL");
    await p.exited;
  }
}

beforeAll(async () => {
  // The repository and the runner's home must be reachable by the other user; the data dir is not.
  chmodSync(work, 0o755);
  mkdirSync(repo);
  writeFileSync(join(repo, "README.md"), "# app\n");
  commit = await commitRepository(repo);
  mkdirSync(runnerHome);
  // git refuses repositories owned by another user unless told otherwise (git-config safe.directory).
  writeFileSync(join(runnerHome, ".gitconfig"), "[safe]\n\tdirectory = *\n");
  await sh(`chown -R ${OTHER_UID}:${OTHER_UID} ${runnerHome}`);

  // The Local Only contract for the person at the host: the first loopback login creates the owner.
  ci = await startGithubProject({ daemon: { listen: `127.0.0.1:${freePort()}` }, repository: { id: 10, full_name: "acme/app", clone_url: repo } });
  daemon = ci.daemon;
  for (const which of ["other", "same"] as const) runners[which] = await ci.registerRunner({ name: `${which}-user`, labels: [which] });
}, 60_000);

afterAll(async () => {
  await stopRunners();
  await ci?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("build code on a runner on the daemon's host", () => {
  test("cannot sign in over loopback (403, no session) nor mint a capability over the management socket", async () => {
    running.push(asOtherUser(["runner"], runnerEnv("other")));
    const before = await sessions();
    const loginsBefore = daemon.logs.filter((l) => l.msg === "login").length;
    const { build, log } = await finishedBuild(
      "other",
      [
        `curl -sS -w '\\nlogin HTTP %{http_code}\\n' -X POST "$ATTACK_URL/v1/auth/local/login" -H 'content-type: application/json' -d '{"email":"owner@example.test"}'`,
        `curl -sS -w '\\nsocket HTTP %{http_code}\\n' --unix-socket "$ATTACK_SOCKET" -X POST http://roost/recovery-capabilities || echo "management socket refused this build (curl exit $?)"`,
        "id -u",
      ],
      [
        { key: "ATTACK_URL", value: daemon.url },
        { key: "ATTACK_SOCKET", value: join(daemon.dataDir, "roost.sock") },
      ],
    );
    expect(build.status).toBe("succeeded");
    expect(log).toContain(
      JSON.stringify({
        code: "local_capability_required",
        message: "Setup is complete, so local login needs a one-time capability: run `roost login` on this host as the daemon's user.",
      }),
    );
    expect(log).toContain("login HTTP 403");
    expect(log).toContain("management socket refused this build (curl exit 7)");
    expect(log).not.toContain("roost_rcv_");
    expect(log).toContain(`\n${OTHER_UID}\n`);
    expect(log).not.toContain("WARNING");
    expect(await sessions()).toBe(before);
    expect(daemon.logs.filter((l) => l.msg === "login").length).toBe(loginsBefore);
    await stopRunners();
  }, 60_000);

  test("a runner as the daemon's own user refuses to start, in one line, with exit code 2", async () => {
    const proc = Bun.spawn([BUN, ROOST, "runner"], { cwd: REPO_ROOT, env: runnerEnv("same"), stdout: "pipe", stderr: "pipe" });
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    expect(code).toBe(2);
    expect(stderr).toBe(
      `roost runner refuses to start: build steps would run as the Roost daemon's own user (uid ${process.getuid!()}) on the daemon's host, where build code can read Roost's database and secret key and sign in as any user. Run the runner as another OS user, e.g. sudo -u roost-runner roost runner (docs/runners.md), or on another machine; --unsafe-allow-same-user overrides this for tests and single-user trials only.\n`,
    );
  }, 30_000);

  test("--unsafe-allow-same-user starts it anyway, and says so in the runner's log and in every build log", async () => {
    const proc = Bun.spawn([BUN, ROOST, "runner", "--unsafe-allow-same-user"], { cwd: REPO_ROOT, env: runnerEnv("same"), stdout: "ignore", stderr: "pipe" });
    running.push(proc);
    const { build, log } = await finishedBuild("same", ["echo hello"]);
    expect(build.status).toBe("succeeded");
    expect(log).toContain(
      `[roost] WARNING (--unsafe-allow-same-user): build steps would run as the Roost daemon's own user (uid ${process.getuid!()}) on the daemon's host`,
    );
    await stopRunners();
    const stderr = await new Response(proc.stderr).text();
    expect(stderr).toContain(`"msg":"WARNING (--unsafe-allow-same-user): build steps would run as the Roost daemon's own user`);
  }, 60_000);
});

describe("roost login", () => {
  test("prints the capability on its own line, to paste on the sign-in page, and a command that signs in once, and only once, with it (from the real Unix socket)", async () => {
    const minted = await daemon.cli(["login", "--email", "owner@example.test"]);
    expect(minted.code).toBe(0);
    // stderr, for a person: what it is, the capability alone on a line, then what the command is.
    const said = minted.stderr.split("\n");
    expect(said[0]).toMatch(
      new RegExp(
        `^one-time capability, valid until \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z, single use; paste it on the sign-in page \\(${daemon.url.replace(/\./g, "\\.")}/sign-in\\):$`,
      ),
    );
    expect(said[1]).toMatch(/^roost_rcv_[0-9A-Za-z]{58}$/);
    expect(said.slice(2)).toEqual(["or sign in from a shell on this host with:", ""]);
    const capability = said[1]!;
    // stdout, for a shell: the command alone, as before.
    const command = minted.stdout.trim();
    expect(command).toBe(
      `curl -sS -X POST ${daemon.url}/v1/auth/local/login -H 'content-type: application/json' -d '{"email":"owner@example.test","recovery_capability":"${capability}"}'`,
    );
    expect(JSON.stringify(daemon.logs)).not.toContain(capability!);

    const first = JSON.parse(await sh(command));
    expect(first.user).toMatchObject({ email: "owner@example.test", role: "owner" });
    expect((await http(daemon.url, "GET", "/v1/users/me", { token: first.session_token })).status).toBe(200);
    const again = JSON.parse(await sh(command));
    expect(again).toEqual({
      code: "recovery_capability_invalid",
      message: "The capability is unknown, expired or already used; run `roost login` on this host for a new one.",
    });
  }, 30_000);

  test("someone who cannot open the socket gets no capability", async () => {
    const proc = asOtherUser(["login"], daemon.env);
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toBe(`cannot reach the management socket at ${join(daemon.dataDir, "roost.sock")}; is 'roost serve' running, and are you its user?\n`);
  }, 30_000);
});
