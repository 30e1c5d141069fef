// Two `roost serve` processes on one database file behave as one (issue 7 "Operating it"): state
// written through either is visible through the other, and concurrent writes through both lose
// nothing. Later sections add builds, job claims, webhook dedupe and logs.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { http, startDaemon, type Daemon } from "../helpers/daemon.ts";

const dataDir = mkdtempSync(join(tmpdir(), "roost-two-"));
let a: Daemon;
let b: Daemon;
let owner = "";

beforeAll(async () => {
  // Started together, as a service manager would: both migrate and prepare first run at once.
  [a, b] = await Promise.all([startDaemon({ dataDir, cleanup: false }), startDaemon({ dataDir, cleanup: false })]);
  owner = (await http(a.url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } })).body.session_token;
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  rmSync(dataDir, { recursive: true, force: true });
});

describe("two daemons, one database", () => {
  test("both are ready, and a session made on one works on the other", async () => {
    expect((await http(a.url, "GET", "/readyz")).status).toBe(200);
    expect((await http(b.url, "GET", "/readyz")).status).toBe(200);
    const me = await http(b.url, "GET", "/v1/users/me", { token: owner });
    expect(me.status).toBe(200);
    expect(me.body.user.email).toBe("owner@example.test");
  });

  test("100 token creations spread over both processes all land, each once", async () => {
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => http(i % 2 ? a.url : b.url, "POST", "/v1/api-tokens", { token: owner, body: { name: `t${i}`, role: "developer" } })),
    );
    expect(results.every((r) => r.status === 201)).toBe(true);
    const listed = await http(a.url, "GET", "/v1/api-tokens?limit=200", { token: owner });
    expect(listed.body.total).toBe(100);
    expect(new Set(listed.body.tokens.map((t: { name: string }) => t.name)).size).toBe(100);
  });

  test("a revocation on one process is refused at once on the other", async () => {
    const created = await http(a.url, "POST", "/v1/api-tokens", { token: owner, body: { name: "cross", role: "developer" } });
    expect((await http(b.url, "GET", "/v1/users/me", { token: created.body.token })).status).toBe(200);
    await http(b.url, "DELETE", `/v1/api-tokens/${created.body.id}`, { token: owner });
    expect((await http(a.url, "GET", "/v1/users/me", { token: created.body.token })).body.code).toBe("invalid_token");
  });

  test("one process serves the management socket; a capability it mints is valid for both", async () => {
    const minted = await a.cli(["recover"]);
    expect(minted.code).toBe(0);
    expect(minted.stdout.trim()).toMatch(/^roost_rcv_/);
  });
});
