// Recovery capabilities on several hosts (docs/operations.md "Several hosts"): two `roost serve`
// on one libSQL server (sqld), each with its own data directory and so its own management socket.
// A capability is a row of the shared database, so one minted through either host's socket signs
// in through the other, exactly once, and restarting or crashing either host voids none.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { startSqld, type Sqld } from "../support/sqld.ts";

let sqld: Sqld;
let a: Daemon;
let b: Daemon;
const env = () => ({ ROOST_DATABASE_URL: sqld.url, ROOST_SECRET_KEY: secretKey });
const secretKey = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64");
const EMAIL = "ops@example.test";
const SPENT = {
  code: "recovery_capability_invalid",
  message: "The capability is unknown, expired or already used; run `roost login` on this host for a new one.",
};

beforeAll(async () => {
  sqld = await startSqld();
  a = await startDaemon({ env: env() });
  b = await startDaemon({ env: env() });
  // First run in Local Only mode: the owner is created and the instance becomes ready, so every
  // later local login needs a capability.
  expect((await http(a.url, "POST", "/v1/auth/local/login", { body: { email: EMAIL } })).status).toBe(200);
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await sqld?.stop();
  if (sqld) rmSync(join(sqld.dir, ".."), { recursive: true, force: true });
});

/** `roost recover` on the host of `d`: mints through that daemon's own management socket. */
async function mint(d: Daemon): Promise<string> {
  const out = await d.cli(["recover"]);
  if (out.code !== 0) throw new Error(`roost recover: ${out.stderr}`);
  return out.stdout.trim();
}

const login = (d: Daemon, capability: string) => http(d.url, "POST", "/v1/auth/local/login", { body: { email: EMAIL, recovery_capability: capability } });

/** Stops `d` (a clean stop or a crash) and starts it again on the same data directory and database. */
async function restart(d: Daemon, signal: NodeJS.Signals): Promise<Daemon> {
  await d.stop(signal);
  return startDaemon({ dataDir: d.dataDir, cleanup: true, env: env() });
}

describe("recovery capabilities on two daemons sharing one sqld", () => {
  test("each host mints through its own socket", async () => {
    expect(a.dataDir).not.toBe(b.dataDir);
    expect(await mint(a)).toMatch(/^roost_rcv_/);
    expect(await mint(b)).toMatch(/^roost_rcv_/);
  }, 30_000);

  test("minted on one host, it signs in on the other once; then it is spent on both", async () => {
    const capability = await mint(a);
    const signedIn = await login(b, capability);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.user).toMatchObject({ email: EMAIL, role: "owner" });
    for (const d of [a, b]) {
      const again = await login(d, capability);
      expect({ status: again.status, body: again.body }).toEqual({ status: 403, body: SPENT });
    }
  }, 30_000);

  test("used through both hosts at once, it signs in exactly once", async () => {
    const capability = await mint(b);
    const results = await Promise.all([a, b, a, b].map((d) => login(d, capability)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 403, 403, 403]);
  }, 30_000);

  test("restarting the host that minted it, or crashing it, voids nothing: the other host still accepts it", async () => {
    const beforeRestart = await mint(a);
    const beforeCrash = await mint(b);
    a = await restart(a, "SIGTERM");
    b = await restart(b, "SIGKILL");
    expect((await login(b, beforeRestart)).status).toBe(200);
    expect((await login(a, beforeCrash)).status).toBe(200);
    expect((await login(a, beforeRestart)).body).toEqual(SPENT);
  }, 60_000);
});
