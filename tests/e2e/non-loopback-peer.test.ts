// Local login from a real non-loopback socket peer: the test makes its own
// network namespace joined to this host by a veth pair, so the client has an address of its own,
// and calls the daemon from inside it. Needs root (CI and this machine run as root); it fails
// rather than skips when it cannot create the namespace.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startDaemon, type Daemon } from "../helpers/daemon.ts";

const id = Math.floor(Math.random() * 200) + 20;
const ns = `roost-t${process.pid}`;
const hostIf = `rh${process.pid % 100000}`;
const nsIf = `rn${process.pid % 100000}`;
const hostAddr = `10.254.${id}.1`;
const nsAddr = `10.254.${id}.2`;

async function sh(cmd: string[]): Promise<{ code: number; out: string }> {
  const p = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out: out + err };
}
async function must(cmd: string[]): Promise<void> {
  const r = await sh(cmd);
  if (r.code !== 0) throw new Error(`${cmd.join(" ")} failed: ${r.out}`);
}

let daemon: Daemon;
beforeAll(async () => {
  await must(["ip", "netns", "add", ns]);
  await must(["ip", "link", "add", hostIf, "type", "veth", "peer", "name", nsIf]);
  await must(["ip", "link", "set", nsIf, "netns", ns]);
  await must(["ip", "addr", "add", `${hostAddr}/30`, "dev", hostIf]);
  await must(["ip", "link", "set", hostIf, "up"]);
  await must(["ip", "netns", "exec", ns, "ip", "addr", "add", `${nsAddr}/30`, "dev", nsIf]);
  await must(["ip", "netns", "exec", ns, "ip", "link", "set", nsIf, "up"]);
  // The daemon listens on the host end of the veth pair only.
  daemon = await startDaemon({ listen: `${hostAddr}:0` });
});
afterAll(async () => {
  await daemon?.stop();
  await sh(["ip", "link", "del", hostIf]);
  await sh(["ip", "netns", "del", ns]);
});

async function curlFromNamespace(method: string, path: string, body?: string, headers: string[] = []) {
  const args = ["ip", "netns", "exec", ns, "curl", "-s", "-m", "5", "-X", method, "-w", "\n%{http_code}", ...headers.flatMap((h) => ["-H", h])];
  if (body !== undefined) args.push("-H", "content-type: application/json", "--data", body);
  const r = await sh([...args, `${daemon.url}${path}`]);
  const lines = r.out.trimEnd().split("\n");
  const status = Number(lines.pop());
  return { status, body: JSON.parse(lines.join("\n")) };
}

describe("a peer outside loopback", () => {
  test("reaches public endpoints over the namespace link", async () => {
    const res = await curlFromNamespace("GET", "/v1/setup/status");
    expect(res.status).toBe(200);
    expect(res.body.state).toBe("incomplete");
  });

  test("cannot use local login, even with a loopback Host and forwarding headers", async () => {
    const res = await curlFromNamespace("POST", "/v1/auth/local/login", '{"email":"intruder@example.test"}', [
      "Host: 127.0.0.1:8080",
      "X-Forwarded-For: 127.0.0.1",
      "Forwarded: for=127.0.0.1",
    ]);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ code: "local_login_loopback_required", message: "Local login is accepted only from this machine's loopback." });
    const status = await curlFromNamespace("GET", "/v1/setup/status");
    expect(status.body).toMatchObject({ state: "incomplete", owner_exists: false });
  });
});
