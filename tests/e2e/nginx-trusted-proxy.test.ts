// Trusted-proxy sign-in through a real nginx in front of a real daemon:
// nginx authenticates with HTTP Basic, replaces any client copy of the identity and secret
// headers and connects from 127.0.0.2, the only trusted peer. Direct requests from other loopback
// sources with spoofed headers (X-Forwarded-For included) are refused with the codes of docs/external-access.md.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { documentedLogFormat, startNginx, type Nginx } from "../support/nginx.ts";
import { pollUntil } from "../helpers/poll.ts";

const SECRET = "nginx-shared-secret-" + crypto.randomUUID();
let daemon: Daemon;
let nginx: Nginx;

beforeAll(async () => {
  daemon = await startDaemon();
  const token = readFileSync(join(daemon.dataDir, "setup-token"), "utf8").trim();
  const steps = [
    await http(daemon.url, "POST", "/v1/setup/preferences", { token, body: { runtime_mode: "remote", remote_auth_mode: "trusted_proxy" } }),
    await http(daemon.url, "POST", "/v1/setup/owner", { token, body: { email: "ada@example.test" } }),
    await http(daemon.url, "PUT", "/v1/setup/trusted-proxy", { token, body: { trusted_peers: ["127.0.0.2"], shared_secret: SECRET } }),
    await http(daemon.url, "POST", "/v1/setup/complete", { token }),
  ];
  for (const s of steps) if (s.status >= 300) throw new Error(`setup failed: ${s.status} ${JSON.stringify(s.body)}`);
  nginx = await startNginx({
    upstream: daemon.url,
    sharedSecret: SECRET,
  });
});
afterAll(async () => {
  await nginx?.stop();
  await daemon?.stop();
});

const basic = (user: string, password: string) => `Basic ${btoa(`${user}:${password}`)}`;

/** curl from a chosen loopback source address (Bun's fetch has no source-address option). */
async function curlFrom(source: string, headers: string[]): Promise<{ status: number; body: any }> {
  const args = [
    "curl",
    "-s",
    "-m",
    "5",
    "--interface",
    source,
    "-X",
    "POST",
    "-w",
    "\n%{http_code}",
    ...headers.flatMap((h) => ["-H", h]),
    `${daemon.url}/v1/auth/trusted-proxy/login`,
  ];
  const p = Bun.spawn(args, { stdout: "pipe", stderr: "pipe" });
  const out = (await new Response(p.stdout).text()).trimEnd().split("\n");
  await p.exited;
  const status = Number(out.pop());
  return { status, body: JSON.parse(out.join("\n")) };
}

describe("trusted-proxy login behind nginx", () => {
  test("nginx authenticates the user and the daemon signs them in, whatever identity the client claimed", async () => {
    const res = await http(nginx.url, "POST", "/v1/auth/trusted-proxy/login", {
      headers: {
        authorization: basic("ada", "wonderland"),
        "x-roost-user-email": "mallory@example.test",
        "X-Roost-Trusted-Proxy-Secret": "guess",
        "x-forwarded-for": "127.0.0.2",
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.user).toMatchObject({ email: "ada@example.test", role: "owner" });
    // The session works on the API, through nginx (Authorization is nginx's own there) and directly.
    const me = await http(daemon.url, "GET", "/v1/users/me", { token: res.body.session_token });
    expect(me.status).toBe(200);
    expect(me.body.user.email).toBe("ada@example.test");
  });

  test("without Basic credentials nginx itself refuses; an authenticated but uninvited user gets 403 user_not_found", async () => {
    const anonymous = await fetch(`${nginx.url}/v1/auth/trusted-proxy/login`, { method: "POST", headers: { "x-roost-user-email": "ada@example.test" } });
    expect(anonymous.status).toBe(401);
    await anonymous.arrayBuffer();
    const mallory = await http(nginx.url, "POST", "/v1/auth/trusted-proxy/login", { headers: { authorization: basic("mallory", "hunter2") } });
    expect(mallory.status).toBe(403);
    expect(mallory.body).toEqual({ code: "user_not_found", message: "No active user has the forwarded e-mail address; ask an admin for an invitation." });
  });

  test("direct requests from untrusted loopback peers with spoofed headers are 403 trusted_proxy_peer_not_allowed", async () => {
    const spoofed = [
      `X-Roost-User-Email: ada@example.test`,
      `X-Roost-Trusted-Proxy-Secret: ${SECRET}`,
      "X-Forwarded-For: 127.0.0.2",
      "Forwarded: for=127.0.0.2",
      "X-Real-IP: 127.0.0.2",
    ];
    for (const source of ["127.0.0.9", "127.0.0.1"]) {
      const res = await curlFrom(source, spoofed);
      expect([source, res.status]).toEqual([source, 403]);
      expect(res.body).toEqual({ code: "trusted_proxy_peer_not_allowed", message: "This request did not come from a trusted proxy." });
    }
  });

  test("the trusted peer itself still needs the secret and one identity", async () => {
    const noSecret = await curlFrom("127.0.0.2", ["X-Roost-User-Email: ada@example.test"]);
    expect(noSecret.body).toEqual({ code: "trusted_proxy_shared_secret_missing", message: "The trusted proxy must send X-Roost-Trusted-Proxy-Secret." });
    const wrong = await curlFrom("127.0.0.2", ["X-Roost-User-Email: ada@example.test", "X-Roost-Trusted-Proxy-Secret: wrong"]);
    expect(wrong.body).toEqual({ code: "trusted_proxy_shared_secret_invalid", message: "X-Roost-Trusted-Proxy-Secret does not match." });
    const twice = await curlFrom("127.0.0.2", [
      `X-Roost-Trusted-Proxy-Secret: ${SECRET}`,
      "X-Roost-User-Email: ada@example.test",
      "X-Roost-User-Email: mallory@example.test",
    ]);
    expect(twice.status).toBe(401);
    expect(twice.body.code).toBe("trusted_proxy_identity_invalid");
  });
});

describe("nginx access log", () => {
  /** The access log once nginx has written the line of the request that asked for `marker`. */
  async function logWith(marker: string): Promise<string> {
    await (await fetch(`${nginx.url}/v1/openapi.json?probe=${marker}`, { headers: { authorization: basic("ada", "wonderland") } })).text();
    // nginx writes a request's log line once it has finished the request, not before its client
    // sees the answer: wait until the marker is there (a loaded host can take more than the 1 s
    // this once waited; then the assertions read a log without the line).
    return pollUntil(
      `nginx's log line for ${marker}`,
      () => nginx.accessLog(),
      (log) => log.includes(`probe=${marker}`),
      10_000,
      20,
    );
  }

  test("the log stream's route is logged without its query string, where the stream token travels", async () => {
    const streamToken = "roost_st_" + "Q".repeat(58);
    const stream = await fetch(`${nginx.url}/v1/builds/b1/logs/stream?token=${streamToken}`);
    expect(stream.status).toBe(401);
    expect(await stream.json()).toEqual({ code: "invalid_token", message: "The stream token is unknown or expired; ask for a new one." });
    const log = await logWith("logged");
    expect(log).toContain('"GET /v1/builds/b1/logs/stream HTTP/1.1" 401');
    expect(log).not.toContain(streamToken);
    expect(log).not.toContain("token=");
    // Every other request keeps its query string in the log.
    expect(log).toContain('"GET /v1/openapi.json?probe=logged HTTP/1.1" 200');
  });

  // The paths and spellings a client might use that are not the stream's exact path: Roost answers
  // 404 JSON (it serves the stream at its exact path only) and nginx still logs no token.
  test("a stream URL that is not the exact path is 404 from Roost, and its token stays out of nginx's log", async () => {
    const token = "roost_st_" + "T".repeat(58);
    for (const path of [
      `/v1/builds/b1/logs/stream/?token=${token}`,
      `/v1/builds/b1/logs/stream//?token=${token}`,
      `/v1/builds/b1/logs/stream/?a=1&token=${token}`,
      `/v1/builds/b1/logs/stream/?%74oken=${token}`,
    ]) {
      // With Basic credentials, so nginx passes it on (its "location /" asks for them) and Roost answers.
      const res = await fetch(`${nginx.url}${path}`, { headers: { authorization: basic("ada", "wonderland") } });
      expect([path, res.status]).toEqual([path, 404]);
      expect(await res.json()).toEqual({ code: "not_found", message: `No endpoint at GET ${new URL(path, "http://x").pathname}.` });
      // Directly, too: the daemon itself does not serve the stream there.
      const direct = await fetch(`${daemon.url}${path}`);
      expect([path, direct.status]).toEqual([path, 404]);
      await direct.arrayBuffer();
    }
    // Another case is the web app's (a page, not the stream), and is not logged with the token either.
    await (await fetch(`${nginx.url}/V1/builds/b1/logs/stream?TOKEN=${token}`, { headers: { authorization: basic("ada", "wonderland") } })).arrayBuffer();
    const log = await logWith("variants");
    expect(log).toContain('"GET /v1/builds/b1/logs/stream/ HTTP/1.1" 404');
    expect(log).toContain('"GET /V1/builds/b1/logs/stream HTTP/1.1" 200');
    expect(log).not.toContain(token);
  });

  test("docs/operations.md and docs/external-access.md give the same log format (the one this nginx runs)", () => {
    expect(documentedLogFormat("docs/operations.md")).toBe(documentedLogFormat("docs/external-access.md"));
  });
});
