// The `roost` command as a Unix tool (docs/operations.md "The binary"), run as real processes:
// a usage error exits 2 with one line on stderr naming the option or argument and starts or
// writes nothing; admin commands refuse a data directory without a Roost database; start-up
// problems stop `roost serve` with one line and exit 2; backups and restored files are 0600.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, REPO_ROOT, ROOST, http, startDaemon } from "../helpers/daemon.ts";

const work = mkdtempSync(join(tmpdir(), "roost-cli-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let scratches = 0;
function scratch(name: string): string {
  const dir = join(work, `${++scratches}-${name.replace(/[^A-Za-z0-9_-]/g, "")}`);
  mkdirSync(dir);
  return dir;
}

/** `roost <args>` in `cwd`, with only the given ROOST_* variables (and a data dir that must stay untouched unless said). */
async function roost(args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = Bun.spawn([BUN, ROOST, ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...env },
    cwd,
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** A port on loopback that nothing listens on (bound, read, released). */
function closedPort(): number {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  return port;
}

describe("usage errors exit 2 with one line naming the option, and start or write nothing", () => {
  test.each([
    [["serve", "--port", "1"], "roost serve: unknown option '--port'; see 'roost serve --help'"],
    [["serve", "extra"], "roost serve: unexpected argument 'extra'; see 'roost serve --help'"],
    [["backup", "--bogus"], "roost backup: unknown option '--bogus'; see 'roost backup --help'"],
    [["backup"], "roost backup: missing <file>; see 'roost backup --help'"],
    [["backup", "one.db", "two.db"], "roost backup: unexpected argument 'two.db'; see 'roost backup --help'"],
    [["login", "--email"], "roost login: option '--email' needs a value; see 'roost login --help'"],
    [["login", "--email="], "roost login: option '--email' needs a value; see 'roost login --help'"],
    [
      ["login", "--email", "--verbose"],
      "roost login: option '--email' needs a value (for one that starts with a dash, write --email=-…); see 'roost login --help'",
    ],
    [["login", "-e", "a@example.test"], "roost login: unknown option '-e'; see 'roost login --help'"],
    [["recover", "everything"], "roost recover: unknown target 'everything' (only setup-token); see 'roost recover --help'"],
    [["recover", "--force"], "roost recover: unknown option '--force'; see 'roost recover --help'"],
    [["migrate", "--dry-run"], "roost migrate: unknown option '--dry-run'; see 'roost migrate --help'"],
    [["version", "--short"], "roost version: unknown option '--short'; see 'roost version --help'"],
    [["user"], "roost user: missing action (list, invite, set-role, deactivate, reactivate); see 'roost user --help'"],
    [["user", "bogus"], "roost user: unknown action 'bogus' (list, invite, set-role, deactivate, reactivate); see 'roost user --help'"],
    [["user", "list", "--all"], "roost user list: unknown option '--all'; see 'roost user list --help'"],
    [["user", "invite", "ops@example.test", "--role"], "roost user invite: option '--role' needs a value; see 'roost user invite --help'"],
    [["user", "invite", "ops@example.test", "--role", "root"], "roost user invite: --role must be one of owner, admin, maintainer, developer, not 'root'"],
    [["user", "invite", "--admin", "ops@example.test"], "roost user invite: unknown option '--admin'; see 'roost user invite --help'"],
    [["user", "invite", "not-an-address"], "roost user invite: 'not-an-address' is not an e-mail address"],
    [["user", "set-role", "ops@example.test"], "roost user set-role: missing <role>; see 'roost user set-role --help'"],
    [["token", "revoke"], "roost token revoke: missing <token_id>; see 'roost token revoke --help'"],
    [["token", "revoke", "--all"], "roost token revoke: unknown option '--all'; see 'roost token revoke --help'"],
    [["frobnicate"], "roost: unknown command 'frobnicate'; see 'roost --help'"],
  ])("roost %p", async (args, message) => {
    const cwd = scratch(`usage-${args.join("_")}`);
    const dataDir = join(cwd, "data");
    const res = await roost(args, { ROOST_DATA_DIR: dataDir, ROOST_LISTEN: `127.0.0.1:${closedPort()}` }, cwd);
    expect(res).toEqual({ code: 2, stdout: "", stderr: message + "\n" });
    // Nothing started (serve creates its data dir first) and nothing written (no file named after a flag).
    expect(readdirSync(cwd)).toEqual([]);
  });
});

describe("admin commands refuse a data directory without a Roost database", () => {
  test.each([[["user", "list"]], [["token", "list"]], [["user", "invite", "ops@example.test"]], [["backup", "copy.db"]]])(
    "roost %p on an empty directory exits 2 naming it and creates nothing",
    async (args) => {
      const cwd = scratch(`empty-${args.join("_")}`);
      const dataDir = join(cwd, "data");
      mkdirSync(dataDir);
      const res = await roost(args, { ROOST_DATA_DIR: dataDir }, cwd);
      const command = `roost ${args[0]}`;
      expect(res).toEqual({
        code: 2,
        stdout: "",
        stderr: `${command}: no Roost database in ${dataDir} (looked for ${join(dataDir, "roost.db")}); set ROOST_DATA_DIR (or ROOST_DATABASE_URL) to the daemon's, or run 'roost serve' to create one\n`,
      });
      expect(readdirSync(cwd)).toEqual(["data"]);
      expect(readdirSync(dataDir)).toEqual([]);
    },
  );

  test("a data directory that does not exist is not created", async () => {
    const cwd = scratch("admin-missing-dir");
    const res = await roost(["user", "list"], { ROOST_DATA_DIR: join(cwd, "typo") }, cwd);
    expect(res.code).toBe(2);
    expect(res.stderr).toStartWith(`roost user: no Roost database in ${join(cwd, "typo")} `);
    expect(readdirSync(cwd)).toEqual([]);
  });

  test("the management-socket companion refuses too, and serves no socket", async () => {
    const cwd = scratch("companion-empty");
    const child = Bun.spawn([BUN, join(REPO_ROOT, "scripts/management-socket.ts")], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ROOST_DATA_DIR: cwd },
      cwd,
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
    expect({ code, stderr }).toEqual({
      code: 2,
      stderr: `management-socket: no Roost database in ${cwd} (looked for ${join(cwd, "roost.db")}); set ROOST_DATA_DIR (or ROOST_DATABASE_URL) to the daemon's, or run 'roost serve' to create one\n`,
    });
    expect(readdirSync(cwd)).toEqual([]);
  });

  test("a SQLite file without Roost's schema is refused and left as it was", async () => {
    const cwd = scratch("admin-foreign-db");
    const { Database } = await import("bun:sqlite");
    const foreign = new Database(join(cwd, "other.db"));
    foreign.run("CREATE TABLE notes (body TEXT)");
    foreign.close();
    const res = await roost(["token", "list"], { ROOST_DATA_DIR: cwd, ROOST_DATABASE_URL: `file:${join(cwd, "other.db")}` }, cwd);
    expect(res).toEqual({
      code: 2,
      stdout: "",
      stderr: `roost token: file:${join(cwd, "other.db")} is not a Roost database (it has no schema_migrations); set ROOST_DATA_DIR (or ROOST_DATABASE_URL) to the daemon's\n`,
    });
    const check = new Database(join(cwd, "other.db"));
    expect(check.query("SELECT name FROM sqlite_master WHERE type = 'table'").all()).toEqual([{ name: "notes" }]);
    check.close();
  });
});

describe("start-up problems stop roost serve with one line and exit 2", () => {
  test("a port another roost listens on: the second one stops before touching the data dir, the first keeps serving", async () => {
    const first = await startDaemon();
    try {
      const address = first.url.replace("http://", "");
      const setupToken = readFileSync(join(first.dataDir, "setup-token"), "utf8");
      // Same data dir and same port, as a second service unit started by mistake would be.
      const res = await roost(["serve"], { ROOST_DATA_DIR: first.dataDir, ROOST_LISTEN: address }, work);
      expect(res).toEqual({
        code: 2,
        stdout: "",
        stderr: `roost serve: cannot listen on ROOST_LISTEN ${address}: the address is already in use (another roost or another program listens there)\n`,
      });
      // It did not get as far as minting a setup token (which would have replaced the first one's).
      expect(readFileSync(join(first.dataDir, "setup-token"), "utf8")).toBe(setupToken);
      expect((await http(first.url, "GET", "/readyz")).status).toBe(200);
      expect(existsSync(join(first.dataDir, "roost.sock"))).toBe(true);
    } finally {
      await first.stop();
    }
  });

  test("a data directory path that runs through a file", async () => {
    const cwd = scratch("serve-file-in-path");
    writeFileSync(join(cwd, "not-a-dir"), "");
    const dataDir = join(cwd, "not-a-dir", "data");
    const res = await roost(["serve"], { ROOST_DATA_DIR: dataDir, ROOST_LISTEN: "127.0.0.1:0" }, cwd);
    expect(res).toEqual({
      code: 2,
      stdout: "",
      stderr: `roost serve: data directory ${dataDir} is not writable: a part of the path is a file, not a directory\n`,
    });
  });

  test("a read-only data directory (a read-only tmpfs: mounting needs root, as the test suite runs)", async () => {
    const mountPoint = scratch("serve-read-only");
    const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", mountPoint]);
    if (mounted.exitCode !== 0) throw new Error(`mount failed (this test needs root): ${mounted.stderr.toString()}`);
    try {
      const res = await roost(["serve"], { ROOST_DATA_DIR: mountPoint, ROOST_LISTEN: "127.0.0.1:0" }, work);
      expect(res).toEqual({ code: 2, stdout: "", stderr: `roost serve: data directory ${mountPoint} is not writable: read-only file system\n` });
    } finally {
      Bun.spawnSync(["umount", mountPoint]);
    }
  });

  test("an unreachable database server, named without its credentials", async () => {
    const cwd = scratch("serve-no-db");
    const port = closedPort();
    const res = await roost(
      ["serve"],
      { ROOST_DATA_DIR: join(cwd, "data"), ROOST_LISTEN: "127.0.0.1:0", ROOST_DATABASE_URL: `http://roost:hunter2@127.0.0.1:${port}/roost?authToken=secret` },
      cwd,
    );
    expect(res.code).toBe(2);
    expect(res.stdout).toBe("");
    expect(res.stderr).toStartWith(`roost serve: cannot use the database http://127.0.0.1:${port}/roost: `);
    expect(res.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(res.stderr).not.toContain("hunter2");
    expect(res.stderr).not.toContain("secret");
  });

  test.each([
    [{ ROOST_RUNNER_HEARTBEAT_SECONDS: "45", ROOST_RUNNER_LEASE_SECONDS: "45" }],
    [{ ROOST_RUNNER_HEARTBEAT_SECONDS: "60", ROOST_RUNNER_LEASE_SECONDS: "30" }],
  ])("a heartbeat interval not shorter than the lease: %p", async (env) => {
    const cwd = scratch(`serve-heartbeat-${env.ROOST_RUNNER_HEARTBEAT_SECONDS}`);
    const res = await roost(["serve"], { ROOST_DATA_DIR: join(cwd, "data"), ROOST_LISTEN: "127.0.0.1:0", ...env }, cwd);
    expect(res).toEqual({
      code: 2,
      stdout: "",
      stderr: "invalid configuration: ROOST_RUNNER_HEARTBEAT_SECONDS: must be shorter than ROOST_RUNNER_LEASE_SECONDS\n",
    });
    expect(readdirSync(cwd)).toEqual([]);
  });
});

describe("backups and restored files are 0600", () => {
  test("roost backup writes a 0600 file whatever the caller's umask, and a restored copy is made 0600 at start", async () => {
    const daemon = await startDaemon();
    const restoredDir = scratch("restored");
    try {
      const file = join(work, "nightly.db");
      const previous = process.umask(0o022); // the child inherits the usual umask
      const res = await roost(["backup", file], { ROOST_DATA_DIR: daemon.dataDir }, work).finally(() => process.umask(previous));
      expect(res).toEqual({ code: 0, stdout: `${file}\n`, stderr: "" });
      expect(statSync(file).mode & 0o777).toBe(0o600);

      // Restored the way operators copy files: cp leaves it 0644 here.
      copyFileSync(file, join(restoredDir, "roost.db"));
      chmodSync(join(restoredDir, "roost.db"), 0o644);
      const restored = await startDaemon({ dataDir: restoredDir, cleanup: false });
      await restored.stop();
      expect(statSync(join(restoredDir, "roost.db")).mode & 0o777).toBe(0o600);
    } finally {
      await daemon.stop();
    }
  });
});
