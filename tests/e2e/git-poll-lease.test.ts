// A daemon killed with SIGKILL while it polls a plain git remote (docs/any-git.md "Polling"): its
// lease on the repository lapses within about two poll intervals, so another daemon on the same
// database polls the repository a few seconds later (not after the two minutes leases used to
// hold), compares against the heads recorded before the kill, and builds the newest head, here a
// commit that replaced the one pushed while the killed daemon was polling.
// The remote is served over git's "dumb" HTTP protocol by this test (static files of a bare
// repository, https://git-scm.com/docs/http-protocol), so the test can hold the killed daemon's
// poll open at its first request. The holder of a live poll renews its lease, so a poll that
// outlasts the lease is not taken over by the other daemon.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { http, startDaemon, type Daemon } from "../helpers/daemon.ts";

const root = mkdtempSync(join(tmpdir(), "roost-lease-"));
const bare = join(root, "app.git");
const work = join(root, "work");
const dataDir = join(root, "data");
const env = { ROOST_GIT_POLL_INTERVAL_SECONDS: "1" };

let held: (() => void)[] = [];
let holding = false;
let requestsHeld = 0;
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(request) {
    const path = new URL(request.url).pathname.replace(/^\/app\.git/, "");
    if (holding && path === "/info/refs") {
      requestsHeld++;
      await new Promise<void>((release) => held.push(release));
      return new Response("released", { status: 503 });
    }
    const file = Bun.file(join(bare, path));
    // text/plain, not application/x-git-upload-pack-advertisement: git falls back to the dumb protocol.
    return (await file.exists()) ? new Response(file, { headers: { "content-type": "text/plain" } }) : new Response("not found", { status: 404 });
  },
});

function git(cwd: string, ...args: string[]): string {
  // Only these repositories: a GIT_DIR inherited from a hook or a script would point git elsewhere.
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("GIT_")));
  const out = Bun.spawnSync(["git", "-C", cwd, ...args], {
    env: { ...clean, GIT_AUTHOR_NAME: "Dev", GIT_AUTHOR_EMAIL: "dev@example.test", GIT_COMMITTER_NAME: "Dev", GIT_COMMITTER_EMAIL: "dev@example.test" },
  });
  if (out.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${out.stderr.toString()}`);
  return out.stdout.toString().trim();
}
/** Commits (or replaces the last commit, force-pushing), and publishes the refs for dumb HTTP. */
function pushCommit(message: string, replace = false): string {
  writeFileSync(join(work, "file.txt"), `${message}\n`);
  git(work, "add", "file.txt");
  git(work, "commit", "-q", ...(replace ? ["--amend"] : []), "-m", message);
  git(work, "push", "-q", ...(replace ? ["--force"] : []), "origin", "HEAD:main");
  git(bare, "update-server-info");
  return git(work, "rev-parse", "HEAD");
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | null | undefined | false>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(200);
  }
}

let a: Daemon | undefined;
let b: Daemon | undefined;
let c: Daemon | undefined;
let owner = "";
let projectId = "";
const builds = async (d: Daemon) =>
  (await http(d.url, "GET", `/v1/projects/${projectId}/builds?limit=50`, { token: owner })).body.builds as { commit_sha: string; trigger_type: string }[];
function release(): void {
  holding = false;
  held.forEach((r) => r());
  held = [];
}

beforeAll(() => {
  git(root, "init", "-q", "--bare", "-b", "main", bare);
  git(root, "clone", "-q", bare, work);
  git(work, "checkout", "-q", "-b", "main");
});
afterAll(async () => {
  release();
  await a?.stop("SIGKILL");
  await Promise.all([b?.stop(), c?.stop()]);
  server.stop(true);
  rmSync(root, { recursive: true, force: true });
});

test("after a daemon is killed mid-poll, another polls the repository within seconds and builds the newest head", async () => {
  const connected = pushCommit("connected");
  a = await startDaemon({ dataDir, cleanup: false, env });
  owner = (await http(a.url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } })).body.session_token as string;
  const integration = await http(a.url, "POST", "/v1/integrations", {
    token: owner,
    body: { provider: "git", name: "app", url: `http://127.0.0.1:${server.port}/app.git` },
  });
  expect(integration.body).toMatchObject({ repositories_synced: 1, sync_error: null });
  const repository = (await http(a.url, "GET", "/v1/integration-repositories", { token: owner })).body.repositories.find(
    (r: { integration_id: string }) => r.integration_id === integration.body.integration.id,
  );
  const project = (await http(a.url, "POST", "/v1/projects", { token: owner, body: { repository_id: repository.id } })).body.project;
  projectId = project.id;
  expect(
    (
      await http(a.url, "POST", `/v1/projects/${project.id}/pipelines`, {
        token: owner,
        body: { name: "all", trigger_config: { events: ["push"], branches: ["**"] } },
      })
    ).status,
  ).toBe(201);

  // 1. A's next poll takes the lease and hangs in git ls-remote; a commit is pushed meanwhile.
  holding = true;
  pushCommit("pushed while the poll hangs");
  await until("daemon A to poll", 15_000, async () => requestsHeld > 0);
  await a.stop("SIGKILL");
  const killedAt = Date.now();

  // 2. The pushed commit is replaced before anyone polls again; the remote answers again.
  const newest = pushCommit("replaces the pushed commit", true);
  release();

  // 3. Another daemon on the same database builds the newest head once A's lease lapses.
  b = await startDaemon({ dataDir, cleanup: false, env });
  const built = await until("the newest head to build", 30_000, async () => (await builds(b!)).find((x) => x.commit_sha === newest));
  const seconds = (Date.now() - killedAt) / 1000;
  expect(built.trigger_type).toBe("webhook");
  // Two poll intervals of lease and a daemon's start-up, with room for a busy machine; the lease used to hold 120 s.
  expect(seconds).toBeLessThan(20);
  expect((await builds(b)).map((x) => x.commit_sha)).toEqual([newest]);
  expect((await builds(b)).some((x) => x.commit_sha === connected)).toBe(false);
}, 90_000);

test("a poll that outlasts its lease is not taken over: the daemon polling renews the lease", async () => {
  c = await startDaemon({ dataDir, cleanup: false, env });
  holding = true;
  requestsHeld = 0;
  const sha = pushCommit("pushed while a live poll hangs");
  await until("a daemon to poll", 15_000, async () => requestsHeld > 0);
  // Three leases (3 s each at a 1 s interval) with both daemons passing every 500 ms: the other daemon never starts a poll.
  await Bun.sleep(9_000);
  expect(requestsHeld).toBe(1);
  release();
  await until("the pushed commit to build", 30_000, async () => (await builds(c!)).find((x) => x.commit_sha === sha));
  expect((await builds(c)).filter((x) => x.commit_sha === sha)).toHaveLength(1);
}, 60_000);
