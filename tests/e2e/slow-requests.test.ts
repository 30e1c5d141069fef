// Slow clients (docs/operations.md, "Malformed and slow requests"): a request's head and then its
// body must arrive within ROOST_REQUEST_TIMEOUT_SECONDS, or the connection is closed, a body with
// 408 request_timeout as JSON. Over a real socket to a real daemon started with a 1 s bound, so a
// client trickling 2 bytes a second is cut within a couple of seconds instead of never.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { startDaemon, type Daemon } from "../helpers/daemon.ts";

const BOUND_SECONDS = 1;
let daemon: Daemon;
let port: number;
beforeAll(async () => {
  daemon = await startDaemon({ env: { ROOST_REQUEST_TIMEOUT_SECONDS: String(BOUND_SECONDS) } });
  port = Number(new URL(daemon.url).port);
});
afterAll(async () => {
  await daemon?.stop();
});

interface Trickled {
  /** What the server wrote before it closed the connection. */
  text: string;
  /** Milliseconds from the first byte sent until the server closed the connection. */
  closedAfterMs: number;
}

/**
 * Sends `head` at once (when given), then `trickle` two bytes every second, as a slowloris client
 * does, until the server closes the connection; gives up after `giveUpMs`.
 */
function trickle(head: string, trickle: string, giveUpMs = 10_000): Promise<Trickled> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const chunks: Buffer[] = [];
    let at = 0;
    let timer: Timer | undefined;
    const socket: Socket = connect(port, "127.0.0.1", () => {
      if (head) socket.write(head);
      timer = setInterval(() => {
        if (at < trickle.length && socket.writable) socket.write(trickle.slice(at, (at += 2)));
      }, 1000);
    });
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the connection was still open after ${giveUpMs} ms; got ${JSON.stringify(Buffer.concat(chunks).toString())}`));
    }, giveUpMs);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", () => {}); // a reset after the answer still ends the connection
    socket.on("close", () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ text: Buffer.concat(chunks).toString(), closedAfterMs: performance.now() - started });
    });
  });
}

describe("a slow body", () => {
  test("a webhook delivery trickled at 2 bytes/s gets 408 request_timeout as JSON and its connection closed after the bound", async () => {
    const body = JSON.stringify({ ref: "refs/heads/main", padding: "x".repeat(200) });
    const head = `POST /v1/webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\nX-GitHub-Delivery: d1\r\nX-Hub-Signature-256: sha256=${"0".repeat(64)}\r\nContent-Length: ${body.length}\r\n\r\n`;
    const answer = await trickle(head, body);
    const [statusLine, ...rest] = answer.text.split("\r\n");
    expect(statusLine).toBe("HTTP/1.1 408 Request Timeout");
    // Header names are case-insensitive (RFC 9110 section 5.1); Bun.serve writes this one as Connection.
    expect(answer.text.toLowerCase()).toContain("\r\nconnection: close\r\n");
    expect(JSON.parse(rest.join("\r\n").split("\r\n\r\n")[1]!)).toEqual({
      code: "request_timeout",
      message: `The request body did not all arrive within ${BOUND_SECONDS} s of its headers; the connection is closed.`,
    });
    expect(answer.closedAfterMs).toBeGreaterThanOrEqual(BOUND_SECONDS * 1000 - 50);
    expect(answer.closedAfterMs).toBeLessThan(BOUND_SECONDS * 1000 + 2500);
  });

  test("a JSON body trickled to an API route is cut the same way", async () => {
    const body = JSON.stringify({ email: "slow@example.test" });
    const head = `POST /v1/auth/local/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const answer = await trickle(head, body);
    expect(answer.text.split("\r\n")[0]).toBe("HTTP/1.1 408 Request Timeout");
    expect(answer.text).toEndWith(
      `{"code":"request_timeout","message":"The request body did not all arrive within ${BOUND_SECONDS} s of its headers; the connection is closed."}`,
    );
  });

  test("a body that arrives within the bound, in pieces, is served", async () => {
    const body = JSON.stringify({ email: "owner@example.test" });
    const answer = await new Promise<string>((resolve) => {
      const chunks: Buffer[] = [];
      const socket = connect(port, "127.0.0.1", () => {
        socket.write(
          `POST /v1/auth/local/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
        );
        setTimeout(() => socket.write(body.slice(5)), 300);
      });
      socket.on("data", (chunk: Buffer) => chunks.push(chunk));
      socket.on("close", () => resolve(Buffer.concat(chunks).toString()));
    });
    expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
  });
});

describe("a slow head", () => {
  test("headers trickled at 2 bytes/s: the connection is closed after the bound (there is no request to answer yet)", async () => {
    const answer = await trickle("", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + "s".repeat(100) + "\r\n\r\n");
    expect(answer.text).toBe("");
    expect(answer.closedAfterMs).toBeGreaterThanOrEqual(BOUND_SECONDS * 1000 - 50);
    expect(answer.closedAfterMs).toBeLessThan(BOUND_SECONDS * 1000 + 2500);
  });

  test("no unhandled error was logged", () => {
    expect(daemon.logs.filter((l) => typeof l.msg === "string" && l.msg.startsWith("unhandled"))).toEqual([]);
  });
});
