// Requests a client can write but no HTTP library would send, over a real socket to a real
// daemon, because Bun's HTTP layer builds request.url and reads the request line itself.
// Every answer Roost gives is JSON {code, message}; what Bun answers on its own (oversized
// headers, a request line it cannot parse) is documented in docs/operations.md.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { startDaemon, type Daemon } from "../helpers/daemon.ts";

let daemon: Daemon;
let port: number;
beforeAll(async () => {
  daemon = await startDaemon();
  port = Number(new URL(daemon.url).port);
});
afterAll(async () => {
  await daemon?.stop();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Writes `request` as-is and reads until the server closes the connection (Connection: close). */
function raw(request: string): Promise<RawAnswer | null> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(request));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(new Error("no answer within 5 s")), 5000);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString("utf8");
      if (text === "") return resolve(null);
      const [head, ...rest] = text.split("\r\n\r\n");
      const [statusLine, ...lines] = head!.split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const at = line.indexOf(":");
        headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
      }
      resolve({ status: Number(statusLine!.split(" ")[1]), headers, body: rest.join("\r\n\r\n") });
    });
  });
}

function get(path: string, headerLines: string[]): Promise<RawAnswer | null> {
  return raw(`GET ${path} HTTP/1.1\r\n${headerLines.map((h) => h + "\r\n").join("")}Connection: close\r\n\r\n`);
}

describe("Host header", () => {
  for (const host of ["127.0.0.1:99999", "[::1", "example.test:-1", "a b"]) {
    for (const path of ["/healthz", "/v1/setup/status", "/v1/users/me", "/v1/nowhere?x=%zz"]) {
      test(`Host: ${host} on ${path} answers 400 invalid_request as JSON`, async () => {
        const answer = await get(path, [`Host: ${host}`]);
        expect(answer).not.toBeNull();
        expect(answer!.status).toBe(400);
        expect(answer!.headers["content-type"]).toStartWith("application/json");
        expect(JSON.parse(answer!.body)).toEqual({ code: "invalid_request", message: "The Host header is not a valid host[:port] (RFC 9112 section 3.2)." });
      });
    }
  }

  test("a request without Host (HTTP/1.0) is served against the daemon's own origin", async () => {
    const answer = await raw("GET /v1/setup/status HTTP/1.0\r\n\r\n");
    expect(answer!.status).toBe(200);
    expect(JSON.parse(answer!.body).state).toBe("incomplete");
  });

  test("no unhandled error was logged", () => {
    expect(daemon.logs.filter((l) => l.msg === "unhandled error" || l.msg === "unhandled server error")).toEqual([]);
  });
});

describe("methods", () => {
  test("a method the API does not use answers 405 JSON with Allow on a known path", async () => {
    const answer = await raw("PROPFIND /v1/setup/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    expect(answer!.status).toBe(405);
    expect(answer!.headers.allow).toBe("GET");
    expect(JSON.parse(answer!.body)).toEqual({ code: "method_not_allowed", message: "PROPFIND is not allowed on /v1/setup/status; use GET." });
  });

  test("a method the API does not use answers 404 JSON on an unknown path", async () => {
    const answer = await raw("MKCOL /v1/nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    expect(answer!.status).toBe(404);
    expect(JSON.parse(answer!.body)).toEqual({ code: "not_found", message: "No endpoint at MKCOL /v1/nowhere." });
  });

  // Bun's HTTP parser refuses these before any Roost code runs (docs/operations.md, "Requests Bun
  // answers itself"); the test pins that behaviour so a Bun upgrade that changes it is noticed.
  test("a lower-case or unknown method is dropped by Bun without an answer", async () => {
    expect(await raw("get /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")).toBeNull();
    expect(await raw("FROB /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")).toBeNull();
  });

  test("oversized headers get Bun's own empty 431", async () => {
    const answer = await get("/healthz", ["Host: 127.0.0.1", `X-Big: ${"a".repeat(20_000)}`]);
    expect(answer!.status).toBe(431);
    expect(answer!.body).toBe("");
  });
});
