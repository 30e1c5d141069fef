// Host credentials and daemon restarts, on real daemons sharing one data dir: only the newest
// setup token works (each start, and `roost recover setup-token`, replaces the earlier ones), while
// a recovery capability minted before a restart (clean or a crash) still works after it, once, as
// it does on another daemon of the same database (tests/e2e/sqld-recovery-capabilities.test.ts).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { http, startDaemon, type Daemon } from "../helpers/daemon.ts";

const dataDir = mkdtempSync(join(tmpdir(), "roost-restart-credentials-"));
let daemon: Daemon | undefined;

afterAll(async () => {
  await daemon?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function restart(signal: NodeJS.Signals = "SIGTERM"): Promise<Daemon> {
  await daemon?.stop(signal);
  daemon = await startDaemon({ dataDir, cleanup: false });
  return daemon;
}

const setupTokenFile = () => readFileSync(join(dataDir, "setup-token"), "utf8").trim();

/** A setup call with an invalid body: 400 means the token was accepted, 401 that it was not. */
const trySetupToken = (d: Daemon, token: string) => http(d.url, "POST", "/v1/setup/preferences", { token, body: { runtime_mode: "neither" } });

const STALE_SETUP_TOKEN = { code: "invalid_setup_token", message: "The setup token is unknown or expired; mint a new one with `roost recover setup-token`." };
const SPENT_CAPABILITY = {
  code: "recovery_capability_invalid",
  message: "The capability is unknown, expired or already used; run `roost login` on this host for a new one.",
};

async function mint(d: Daemon, args: string[]): Promise<string> {
  const out = await d.cli(args);
  if (out.code !== 0) throw new Error(`roost ${args.join(" ")}: ${out.stderr}`);
  return out.stdout.trim();
}

describe("setup tokens", () => {
  test("a restart writes a new setup token and the one from the earlier start stops working", async () => {
    const first = await restart();
    const earlier = setupTokenFile();
    expect((await trySetupToken(first, earlier)).status).toBe(400);

    const second = await restart();
    const newest = setupTokenFile();
    expect(newest).not.toBe(earlier);
    const stale = await trySetupToken(second, earlier);
    expect(stale.status).toBe(401);
    expect(stale.body).toEqual(STALE_SETUP_TOKEN);
    expect((await trySetupToken(second, newest)).status).toBe(400);
  }, 60_000);

  test("a token minted with `roost recover setup-token` makes the one in the file stop working", async () => {
    const d = daemon!;
    const inFile = setupTokenFile();
    const minted = await mint(d, ["recover", "setup-token"]);
    expect(minted).toMatch(/^roost_setup_/);
    expect((await trySetupToken(d, inFile)).body).toEqual(STALE_SETUP_TOKEN);
    expect((await trySetupToken(d, minted)).status).toBe(400);
  }, 30_000);
});

describe("recovery capabilities", () => {
  test("a capability minted before a restart or a crash works after it, once", async () => {
    let d = daemon!;
    // First run in Local Only mode: the owner is created and the instance becomes ready.
    expect((await http(d.url, "POST", "/v1/auth/local/login", { body: { email: "ops@example.test" } })).status).toBe(200);
    const login = (capability: string) => http(d.url, "POST", "/v1/auth/local/login", { body: { email: "ops@example.test", recovery_capability: capability } });

    expect((await login(await mint(d, ["recover"]))).status).toBe(200);

    const beforeRestart = await mint(d, ["recover"]);
    d = await restart();
    expect((await login(beforeRestart)).status).toBe(200);
    const reused = await login(beforeRestart);
    expect(reused.status).toBe(403);
    expect(reused.body).toEqual(SPENT_CAPABILITY);

    const beforeCrash = await mint(d, ["recover"]);
    d = await restart("SIGKILL");
    expect((await login(beforeCrash)).status).toBe(200);
    expect((await login(beforeCrash)).body).toEqual(SPENT_CAPABILITY);
  }, 60_000);
});
