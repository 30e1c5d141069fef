// The connect answer tells a runner on the daemon's host which OS user the daemon runs as
// (docs/runners.md "Build code and the daemon's host"), and tells nobody else.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bootstrapOwner, createTestApp, type TestApp } from "../helpers/app.ts";

let t: TestApp;
let runner: { id: string; token: string };
beforeAll(async () => {
  t = await createTestApp();
  const owner = await bootstrapOwner(t);
  const created = await t.call("POST", "/v1/runners", { token: owner, body: { name: "r" } });
  runner = { id: created.body.runner.id, token: created.body.token };
});
afterAll(() => t.close());

const connect = (peer: string) =>
  t.call("POST", `/v1/runners/${runner.id}/connect`, { peer, token: runner.token, body: { capabilities: { os: "linux", arch: "x64" }, version: "test" } });

describe("daemon_uid in the connect answer", () => {
  test.each([["127.0.0.1"], ["::1"], ["::ffff:127.0.0.1"]])("to a runner on this host (peer %p) it is the daemon's uid", async (peer) => {
    const res = await connect(peer);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ heartbeat_seconds: 10, lease_seconds: 45, max_log_request_bytes: expect.any(Number), daemon_uid: process.getuid!() });
  });

  test.each([["203.0.113.9"], ["2001:db8::7"]])("to a runner elsewhere (peer %p) it is absent", async (peer) => {
    const res = await connect(peer);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ heartbeat_seconds: 10, lease_seconds: 45, max_log_request_bytes: expect.any(Number) });
  });
});
