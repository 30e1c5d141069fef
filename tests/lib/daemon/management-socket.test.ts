// The management socket (lib/daemon/management-socket.ts) when two roost processes on one host
// start at the same moment, as a service manager starts them: exactly one serves it, and the other
// learns that another process does (and starts without it) instead of failing on the bind.
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SocketInUseError, startManagementSocket, type ManagementSocket } from "../../../lib/daemon/management-socket.ts";
import { createTestApp, type TestApp } from "../../helpers/app.ts";

const opened: Array<{ t: TestApp; dir: string; sockets: ManagementSocket[] }> = [];
afterEach(async () => {
  for (const o of opened.splice(0)) {
    for (const s of o.sockets) await s.stop();
    o.t.close();
    rmSync(o.dir, { recursive: true, force: true });
  }
});

test("two starts at once on one path: one serves the socket, the other is told it is in use", async () => {
  const t = await createTestApp();
  const dir = mkdtempSync(join(tmpdir(), "roost-mgmt-"));
  const entry = { t, dir, sockets: [] as ManagementSocket[] };
  opened.push(entry);
  const path = join(dir, "roost.sock");
  const deps = { db: t.ctx.db, clock: t.clock, log: t.ctx.log, path };
  const outcomes = await Promise.allSettled([startManagementSocket(deps), startManagementSocket(deps)]);
  for (const o of outcomes) if (o.status === "fulfilled") entry.sockets.push(o.value);
  expect(entry.sockets.length).toBe(1);
  const refused = outcomes.find((o) => o.status === "rejected") as PromiseRejectedResult;
  expect(refused.reason).toBeInstanceOf(SocketInUseError);
  // The one that serves answers on the path.
  const status = await fetch("http://roost/status", { unix: path } as RequestInit);
  expect(status.status).toBe(200);
});
