// Requests a client can write but no HTTP library would send, over a real socket to a real
// daemon, because the listener (lib/http/listener.ts) reads the request line and headers itself.
// Every answer is JSON {code, message}, including to what the HTTP parser refuses (an unknown or
// lower-case method, a request line or header it cannot parse, oversized headers, a broken
// body), and the connection is then closed (docs/operations.md, "Malformed and slow requests").
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

  test("TRACE, which a fetch Request cannot carry, answers 405 JSON with Allow", async () => {
    const answer = await raw("TRACE /v1/setup/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    expect(answer!.status).toBe(405);
    expect(answer!.headers.allow).toBe("GET");
    expect(JSON.parse(answer!.body)).toEqual({ code: "method_not_allowed", message: "TRACE is not allowed on /v1/setup/status; use GET." });
  });
});

/** What the HTTP parser refuses: each is answered with JSON {code, message}, then the connection closes. */
const UNPARSED: Array<[string, string, number, { code: string; message: string }, Record<string, string>?]> = [
  // RFC 9110 section 9.1: methods are case-sensitive; `get` is not GET.
  [
    "a lower-case method",
    "get /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    400,
    { code: "invalid_request", message: "Methods are case-sensitive (RFC 9110 section 9.1): send GET, not get." },
  ],
  [
    "a lower-case method on the API",
    "post /v1/auth/local/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}",
    400,
    { code: "invalid_request", message: "Methods are case-sensitive (RFC 9110 section 9.1): send POST, not post." },
  ],
  [
    "an unknown method on a known path",
    "FOO /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    405,
    { code: "method_not_allowed", message: "FOO is not allowed on /healthz; use GET." },
    { allow: "GET" },
  ],
  [
    "an unknown method on an unknown path",
    "FROB /v1/nowhere?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    404,
    { code: "not_found", message: "No endpoint at FROB /v1/nowhere." },
  ],
  [
    "CONNECT",
    "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n",
    400,
    { code: "invalid_request", message: "Roost is not a proxy: CONNECT is refused (RFC 9110 section 9.3.6)." },
  ],
  [
    "a request line that is not one",
    "GARBAGE\r\n\r\n",
    400,
    { code: "invalid_request", message: "The request line is not METHOD target HTTP/1.1 (RFC 9112 section 3)." },
  ],
  [
    "a request line without a version",
    "GET /healthz\r\n\r\n",
    400,
    { code: "invalid_request", message: "The request line is not METHOD target HTTP/1.1, with a target of URL characters (RFC 9112 section 3)." },
  ],
  [
    "a space in the target",
    "GET /a b HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    400,
    { code: "invalid_request", message: "The request line is not METHOD target HTTP/1.1, with a target of URL characters (RFC 9112 section 3)." },
  ],
  [
    "HTTP/2.0 in an HTTP/1 request line",
    "GET /healthz HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n",
    400,
    { code: "invalid_request", message: "The request line is not METHOD target HTTP/1.1, with a target of URL characters (RFC 9112 section 3)." },
  ],
  [
    "lines ending in LF alone",
    "GET /healthz HTTP/1.1\nHost: 127.0.0.1\n\n",
    400,
    { code: "invalid_request", message: "The request line is not METHOD target HTTP/1.1, with a target of URL characters (RFC 9112 section 3)." },
  ],
  [
    "a header line without a colon",
    "GET /healthz HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n",
    400,
    { code: "invalid_request", message: "A request header is not name: value with a valid name and value (RFC 9112 section 5)." },
  ],
  [
    "a control character in a header",
    "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\u0001b\r\n\r\n",
    400,
    { code: "invalid_request", message: "A request header is not name: value with a valid name and value (RFC 9112 section 5)." },
  ],
  [
    "a Content-Length that is not a number",
    "POST /v1/auth/local/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n",
    400,
    {
      code: "invalid_request",
      message: "The request body's framing is not valid: one Content-Length, or Transfer-Encoding: chunked with valid chunks (RFC 9112 section 6).",
    },
  ],
  [
    "Content-Length with Transfer-Encoding",
    "POST /v1/auth/local/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    400,
    {
      code: "invalid_request",
      message: "The request body's framing is not valid: one Content-Length, or Transfer-Encoding: chunked with valid chunks (RFC 9112 section 6).",
    },
  ],
  [
    "two Content-Lengths",
    "POST /v1/auth/local/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    400,
    {
      code: "invalid_request",
      message: "The request body's framing is not valid: one Content-Length, or Transfer-Encoding: chunked with valid chunks (RFC 9112 section 6).",
    },
  ],
  [
    "an HTTP/1.1 request without Host",
    "GET /healthz HTTP/1.1\r\n\r\n",
    400,
    { code: "invalid_request", message: "An HTTP/1.1 request needs a Host header (RFC 9112 section 3.2)." },
  ],
  [
    "headers over 16 KiB",
    `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`,
    431,
    { code: "headers_too_large", message: "The request line and headers are larger than 16 KiB in all (RFC 6585 section 5)." },
  ],
  // The head is fine and the handler reads the body, whose chunked framing breaks half-way.
  [
    "a bad chunk size in a body being read",
    'POST /v1/auth/local/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{"\r\nzz\r\n\r\n',
    400,
    { code: "invalid_request", message: "The request body's framing is not valid HTTP/1.1 (RFC 9112 section 7)." },
  ],
];

describe("requests the HTTP parser refuses", () => {
  for (const [what, request, status, body, headers] of UNPARSED) {
    test(`${what}: ${status} ${body.code} as JSON, and the connection closes`, async () => {
      // No Connection: close in the request: the answer itself must end the connection (raw() reads until it does).
      const answer = await raw(request);
      expect(answer).not.toBeNull();
      expect(answer!.status).toBe(status);
      expect(answer!.headers["content-type"]).toStartWith("application/json");
      expect(JSON.parse(answer!.body)).toEqual(body);
      for (const [name, value] of Object.entries(headers ?? {})) expect(answer!.headers[name]).toBe(value);
    });
  }

  test("a malformed request pipelined after a good one is answered after it, in order", async () => {
    const answer = await raw("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nget /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    expect(answer!.status).toBe(200);
    expect(answer!.body).toContain("HTTP/1.1 400 Bad Request");
    expect(answer!.body).toEndWith('{"code":"invalid_request","message":"Methods are case-sensitive (RFC 9110 section 9.1): send GET, not get."}');
  });

  test("no unhandled error was logged", () => {
    expect(daemon.logs.filter((l) => l.msg === "unhandled error" || l.msg === "unhandled server error" || l.msg === "unhandled listener error")).toEqual([]);
  });
});
