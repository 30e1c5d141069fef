// A real daemon process: first run in Local Only mode, state kept across restarts, the files it
// writes, and the CLI's exit codes (README "First run").
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, REPO_ROOT, ROOST, http, startDaemon } from "../helpers/daemon.ts";

const dataDir = mkdtempSync(join(tmpdir(), "roost-e2e-first-run-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe("first run, restart, and the files on disk", () => {
  let ownerSession = "";
  let apiToken = "";
  let apiTokenId = "";

  test("a fresh daemon writes a 0600 setup token file and a 0600 socket in a 0700 data dir, and logs the path only", async () => {
    const daemon = await startDaemon({ dataDir, cleanup: false });
    try {
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
      const tokenFile = join(dataDir, "setup-token");
      expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
      const token = readFileSync(tokenFile, "utf8").trim();
      expect(token).toMatch(/^roost_setup_/);
      expect(JSON.stringify(daemon.logs)).not.toContain(token);
      expect(daemon.logs.some((l) => l.setup_token_file === tokenFile)).toBe(true);
      expect(statSync(join(dataDir, "roost.sock")).mode & 0o777).toBe(0o600);
      expect(statSync(join(dataDir, "roost.db")).mode & 0o777).toBe(0o600);

      const openapi = await http(daemon.url, "GET", "/v1/openapi.json");
      expect(openapi.status).toBe(200);

      const login = await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } });
      expect(login.status).toBe(200);
      expect(login.body.user.role).toBe("owner");
      ownerSession = login.body.session_token;
      const created = await http(daemon.url, "POST", "/v1/api-tokens", { token: ownerSession, body: { name: "survives restarts", role: "admin" } });
      expect(created.status).toBe(201);
      apiToken = created.body.token;
      apiTokenId = created.body.id;
      await http(daemon.url, "POST", "/v1/users", { token: ownerSession, body: { email: "dev@example.test", role: "developer" } });
      expect(() => statSync(tokenFile)).toThrow();
    } finally {
      expect(await daemon.stop()).toBe(0);
    }
    // Once, for a person: the URL to open, in the JSON line's msg; the setup hint points there, not at the API.
    expect(daemon.logs.filter((l) => String(l.msg).startsWith("open "))).toEqual([
      expect.objectContaining({ level: "info", msg: `open ${daemon.url}/ in a browser on this machine to set up Roost`, url: `${daemon.url}/` }),
    ]);
    expect(String(daemon.logs.find((l) => l.msg === "setup is incomplete")?.hint)).toStartWith("Open Roost in a browser on this machine");
  });

  test("after a restart, users, sessions, tokens and the ready state are all still there", async () => {
    const daemon = await startDaemon({ dataDir, cleanup: false });
    try {
      const status = await http(daemon.url, "GET", "/v1/setup/status");
      expect(status.body).toMatchObject({ state: "ready", runtime_mode: "local", owner_exists: true });
      const me = await http(daemon.url, "GET", "/v1/users/me", { token: ownerSession });
      expect(me.status).toBe(200);
      const tokens = await http(daemon.url, "GET", "/v1/api-tokens", { token: apiToken });
      expect(tokens.status).toBe(200);
      expect(tokens.body.tokens.map((x: { id: string }) => x.id)).toContain(apiTokenId);
      const users = await http(daemon.url, "GET", "/v1/users", { token: ownerSession });
      expect(users.body.users.map((u: { email: string }) => u.email).sort()).toEqual(["dev@example.test", "owner@example.test"]);
      // No new setup token once ready.
      expect(() => statSync(join(dataDir, "setup-token"))).toThrow();
      // Logout on this process invalidates the session for good.
      expect((await http(daemon.url, "POST", "/v1/auth/logout", { token: ownerSession })).body).toEqual({ ok: true });
      expect((await http(daemon.url, "GET", "/v1/users/me", { token: ownerSession })).status).toBe(401);
    } finally {
      await daemon.stop();
    }
    expect(daemon.logs.filter((l) => String(l.msg).startsWith("open ")).map((l) => l.msg)).toEqual([
      `open ${daemon.url}/ in a browser on this machine to use Roost`,
    ]);
  });

  test("over a real socket, errors are {code, message} with a request id", async () => {
    const daemon = await startDaemon();
    try {
      const res = await fetch(daemon.url + "/v1/api-tokens", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer x" },
        body: "{",
      });
      expect(res.status).toBe(401);
      // "x" is no Roost credential at all: the answer says what the endpoint takes, nothing about any token.
      expect(await res.json()).toEqual({
        code: "wrong_credential",
        message:
          "A bearer value that is not a Roost credential (those start with roost_) cannot call user endpoints: this endpoint takes a user session or an API token.",
      });
      expect(res.headers.get("www-authenticate")).toStartWith("Bearer");
      expect(res.headers.get("x-request-id")).toBeTruthy();
    } finally {
      await daemon.stop();
    }
  });
});

describe("the roost command", () => {
  async function roost(args: string[], env: Record<string, string> = {}) {
    const child = Bun.spawn([BUN, ROOST, ...args], { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? "", ...env }, stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    return { code, stdout, stderr };
  }

  test("a bad configuration value exits 2 naming the variable", async () => {
    const res = await roost(["serve"], { ROOST_LISTEN: "nonsense" });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain("ROOST_LISTEN");
  });

  test("recover without a running daemon exits 1 and says why", async () => {
    const dir = mkdtempSync(join(tmpdir(), "roost-e2e-nodaemon-"));
    try {
      const res = await roost(["recover"], { ROOST_DATA_DIR: dir });
      expect(res.code).toBe(1);
      expect(res.stderr).toContain("cannot reach the management socket");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("every command has --help; unknown commands exit 2", async () => {
    for (const command of ["serve", "login", "recover", "runner", "migrate", "version", "user", "token", "backup"]) {
      const res = await roost([command, "--help"]);
      expect(res.code).toBe(0);
      expect(res.stdout).toContain(`roost ${command}`);
    }
    expect((await roost(["frobnicate"])).code).toBe(2);
    expect((await roost(["version"])).stdout).toMatch(/^roost \d+\.\d+\.\d+/);
  });

  test("migrate applies the schema and is idempotent", async () => {
    const dir = mkdtempSync(join(tmpdir(), "roost-e2e-migrate-"));
    try {
      const first = await roost(["migrate"], { ROOST_DATA_DIR: dir });
      expect(first.code).toBe(0);
      expect(first.stdout).toMatch(/^schema version 0 -> \d+/);
      const second = await roost(["migrate"], { ROOST_DATA_DIR: dir });
      expect(second.stdout).toMatch(/^schema version (\d+) -> \1/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("managing the instance without the API", () => {
  test("roost user and roost token act on the running daemon's database", async () => {
    const daemon = await startDaemon();
    try {
      const login = await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } });
      const owner = login.body.session_token;
      const invited = await daemon.cli(["user", "invite", "Ops@Example.test", "--role", "admin"]);
      expect(invited.code).toBe(0);
      expect(invited.stdout).toContain("ops@example.test\tadmin");
      // After the first login, a local login needs a capability from the management socket.
      const capability = (await daemon.cli(["recover"])).stdout.trim();
      const ops = await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "ops@example.test", recovery_capability: capability } });
      expect(ops.status).toBe(200);
      expect(ops.body.user.role).toBe("admin");

      const created = await http(daemon.url, "POST", "/v1/api-tokens", { token: owner, body: { name: "leaked", role: "owner" } });
      const revoked = await daemon.cli(["token", "revoke", created.body.id]);
      expect(revoked).toEqual({ code: 0, stdout: `revoked ${created.body.id}\n`, stderr: "" });
      expect((await http(daemon.url, "GET", "/v1/users/me", { token: created.body.token })).body.code).toBe("invalid_token");

      const lastOwner = await daemon.cli(["user", "deactivate", "owner@example.test"]);
      expect(lastOwner.code).toBe(1);
      expect(lastOwner.stderr).toContain("last_owner");
      expect((await daemon.cli(["user", "deactivate", "ops@example.test"])).code).toBe(0);
      expect((await http(daemon.url, "GET", "/v1/users/me", { token: ops.body.session_token })).status).toBe(401);
      expect((await daemon.cli(["user", "bogus"])).code).toBe(2);
    } finally {
      await daemon.stop();
    }
  });
});

describe("backups", () => {
  test("roost backup writes a consistent copy while the daemon serves, and refuses to overwrite", async () => {
    const daemon = await startDaemon();
    try {
      await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } });
      const file = join(daemon.dataDir, "backup.db");
      const res = await daemon.cli(["backup", file]);
      expect(res.code).toBe(0);
      expect(res.stdout.trim()).toBe(file);
      const restored = await daemon.cli(["user", "list"]);
      expect(restored.stdout).toContain("owner@example.test");
      const { openDatabase } = await import("../../lib/db/client.ts");
      const copy = await openDatabase(`file:${file}`);
      const users = await copy.execute("SELECT email FROM users");
      copy.close();
      expect(users.rows.map((r) => r.email)).toEqual(["owner@example.test"]);
      expect((await daemon.cli(["backup", file])).code).toBe(1);
    } finally {
      await daemon.stop();
    }
  });
});

describe("oversized bodies over a real socket", () => {
  test("a 28 MB body is refused with a JSON 413, declared or chunked", async () => {
    const daemon = await startDaemon();
    try {
      const owner = (await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } })).body.session_token;
      const big = "a".repeat(28 * 1024 * 1024);
      const declared = await fetch(daemon.url + "/v1/api-tokens", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${owner}` },
        body: big,
      });
      expect(declared.status).toBe(413);
      expect(await declared.json()).toEqual({ code: "payload_too_large", message: "The request body is larger than the limit of 1048576 bytes." });
      const stream = new ReadableStream({
        start(controller) {
          for (let i = 0; i < 28; i++) controller.enqueue(new TextEncoder().encode("a".repeat(1024 * 1024)));
          controller.close();
        },
      });
      const chunked = await fetch(daemon.url + "/v1/api-tokens", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${owner}` },
        body: stream,
      });
      expect(chunked.status).toBe(413);
      expect(((await chunked.json()) as { code: string }).code).toBe("payload_too_large");
    } finally {
      await daemon.stop();
    }
  });
});
