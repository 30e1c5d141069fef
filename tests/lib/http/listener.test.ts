// The listener (lib/http/listener.ts) around the real app, over a real socket, with a 1 s bound on
// request bodies: every body but a runner's artifact upload must arrive within it, and each reaches
// the app whole and unchanged.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect } from "node:net";
import { listen, type Listener } from "../../../lib/http/listener.ts";
import { readBodyBytes, requestBody } from "../../../lib/http/io.ts";
import { silentLogger } from "../../../lib/daemon/log.ts";
import { SHA_A, createPipeline, startCiFixture, type CiFixture } from "../../helpers/ci.ts";

let fixture: CiFixture;
let listener: Listener;
beforeAll(async () => {
  fixture = await startCiFixture();
  const { app } = fixture.t;
  listener = await listen(
    {
      fetch: (request, peer, connection) => app.fetch(request, peer, connection),
      refuseMethod: (m, p) => app.refuseMethod(m, p),
      error: () => new Response(null, { status: 500 }),
    },
    { hostname: "127.0.0.1", port: 0, fallbackOrigin: null, requestTimeoutSeconds: 1, idleTimeoutSeconds: 30, log: silentLogger },
  );
});
afterAll(async () => {
  await listener?.stop(true);
  await fixture?.stop();
});

/** Sends `head`, then `body` in pieces of `piece` bytes every `everyMs`; resolves with what came back once the connection closes. */
function sendSlowly(head: string, body: string, piece: number, everyMs: number): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let at = 0;
    let timer: Timer | undefined;
    const socket = connect(listener.port, "127.0.0.1", () => {
      socket.write(head);
      timer = setInterval(() => {
        if (at < body.length && socket.writable) socket.write(body.slice(at, (at += piece)));
      }, everyMs);
    });
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearInterval(timer);
      resolve(Buffer.concat(chunks).toString());
    });
  });
}

test("a runner's artifact upload may take longer than the bound on request bodies; a runner's log batch may not", async () => {
  const { t, owner, projectId } = fixture;
  const created = await t.call("POST", "/v1/runners", { token: owner, body: { name: "slow-link" } });
  const runner = created.body.runner.id as string;
  const token = created.body.token as string;
  await t.call("POST", `/v1/runners/${runner}/connect`, {
    token,
    body: { capabilities: { os: "linux", arch: "x64", flutter_versions: ["3.24.5"], xcode: null }, version: "test" },
  });
  const pipeline = await createPipeline(t, owner, projectId);
  await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
  const job = (await t.call("POST", `/v1/runners/${runner}/jobs/claim`, { token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } })).body.job;

  // 40 bytes in 4 pieces, 600 ms apart: about 2.4 s for the whole body.
  const content = "PK\u0003\u0004 an apk that comes in slowly..".slice(0, 40).padEnd(40, ".");
  const sha = new Bun.CryptoHasher("sha256").update(content).digest("hex");
  const upload = await sendSlowly(
    `PUT /v1/runners/${runner}/jobs/${job.job_id}/artifacts?path=app.apk HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/octet-stream\r\nX-Roost-Artifact-SHA256: ${sha}\r\nContent-Length: ${content.length}\r\nConnection: close\r\n\r\n`,
    content,
    10,
    600,
  );
  expect(upload.split("\r\n")[0]).toBe("HTTP/1.1 201 Created");
  expect(JSON.parse(upload.slice(upload.indexOf("\r\n\r\n") + 4)).artifact).toMatchObject({ path: "app.apk", size: 40, sha256: sha });

  const logs = JSON.stringify({ entries: [{ seq: 1, stream: "stdout", text: "slow\n", at: 1 }] });
  const batch = await sendSlowly(
    `POST /v1/runners/${runner}/jobs/${job.job_id}/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${logs.length}\r\n\r\n`,
    logs,
    10,
    600,
  );
  expect(batch.split("\r\n")[0]).toBe("HTTP/1.1 408 Request Timeout");
  expect(batch).toEndWith('{"code":"request_timeout","message":"The request body did not all arrive within 1 s of its headers; the connection is closed."}');
});

test("well-formed requests reach the app as Bun.serve's own Request, and a kept-alive connection carries one after another", async () => {
  // Through node:http's IncomingMessage and ServerResponse a request costs about three times the
  // CPU (docs/benchmarks.md, "The request path"): a Bun without the Bun.serve under node:http fails here, not silently.
  expect(listener.natively).toBe(true);
  const answers = await new Promise<string>((resolve) => {
    const chunks: Buffer[] = [];
    const get = (close: boolean) => `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n${close ? "Connection: close\r\n" : ""}\r\n`;
    const socket = connect(listener.port, "127.0.0.1", () => socket.write(get(false)));
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      if (chunks.length === 1) setTimeout(() => socket.write(get(true)), 300);
    });
    socket.on("close", () => resolve(Buffer.concat(chunks).toString()));
  });
  expect(answers.match(/HTTP\/1\.1 200 OK\r\n/g)?.length).toBe(2);
  expect(answers.match(/\{"status":"ok"\}/g)?.length).toBe(2);
});

/** The status line's code of the answer to GET `target`, sent as written. */
function statusOf(target: string): Promise<number> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect(listener.port, "127.0.0.1", () => socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`));
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", () => {});
    socket.on("close", () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(Buffer.concat(chunks).toString())?.[1] ?? 0)));
  });
}

test("a request target is routed by its path as the URL parser reads it: dot segments, escapes and backslashes", async () => {
  // lib/http/app.ts reads a plain path from the URL's text and parses any other.
  expect(await statusOf("/healthz")).toBe(200);
  expect(await statusOf("/v1/../healthz")).toBe(200);
  expect(await statusOf("/./healthz")).toBe(200);
  expect(await statusOf("/%68ealthz")).toBe(200);
  expect(await statusOf("/x\\..\\healthz")).toBe(200);
  expect(await statusOf("/v1/users/./me")).toBe(401);
  expect(await statusOf("/v1/users/%6De")).toBe(405); // a user id, not /me: PATCH only
  expect(await statusOf("/v1/users/me/.")).toBe(404);
  expect(await statusOf("/healthz?probe=1")).toBe(200);
});

test("a connection busy with one request after another outlives the idle timeout", async () => {
  const { app } = fixture.t;
  const short = await listen(
    {
      fetch: (request, peer, connection) => app.fetch(request, peer, connection),
      refuseMethod: (m, p) => app.refuseMethod(m, p),
      error: () => new Response(null, { status: 500 }),
    },
    // Bun.serve's idle timer ticks every few seconds: 5 s is closed 4 to 8 s after the last byte, and this connection is busy for 6 s.
    { hostname: "127.0.0.1", port: 0, fallbackOrigin: null, requestTimeoutSeconds: 10, idleTimeoutSeconds: 5, log: silentLogger },
  );
  try {
    const answered = await new Promise<number>((resolve) => {
      let count = 0;
      const socket = connect(short.port, "127.0.0.1", () => socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
      socket.on("data", (chunk: Buffer) => {
        count += chunk.toString().split("HTTP/1.1 200 OK").length - 1;
        if (count < 24) setTimeout(() => socket.writable && socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), 250);
        else socket.end();
      });
      socket.on("error", () => {});
      socket.on("close", () => resolve(count));
    });
    expect(answered).toBe(24);
  } finally {
    await short.stop(true);
  }
}, 20_000);

test("every body reaches the app whole and unchanged: JSON, a form, 100 KB, chunked (no Content-Length), an upload's stream", async () => {
  const seen: string[] = [];
  const probe = await listen(
    {
      async fetch(request) {
        const upload = request.headers.get("content-type") === "application/octet-stream";
        const bytes = upload ? new Uint8Array(await new Response(requestBody(request)).arrayBuffer()) : await readBodyBytes(request, 1024 * 1024);
        seen.push(new TextDecoder().decode(bytes));
        return new Response(null, { status: 204 });
      },
      refuseMethod: () => new Response(null, { status: 405 }),
      error: () => new Response(null, { status: 500 }),
    },
    { hostname: "127.0.0.1", port: 0, fallbackOrigin: null, requestTimeoutSeconds: 5, idleTimeoutSeconds: 30, log: silentLogger },
  );
  try {
    const url = `http://127.0.0.1:${probe.port}/v1/anything`;
    const post = (body: RequestInit["body"], type: string) => fetch(url, { method: "POST", headers: { "content-type": type }, body });
    const json = JSON.stringify({ padding: "x".repeat(1000) });
    const form = `payload=${encodeURIComponent(json)}`;
    const big = JSON.stringify({ padding: "y".repeat(100 * 1024) });
    const chunked = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(json.slice(0, 100)));
        controller.enqueue(new TextEncoder().encode(json.slice(100)));
        controller.close();
      },
    });
    const statuses = [
      (await post(json, "application/json")).status,
      (await post(form, "application/x-www-form-urlencoded")).status,
      (await post(big, "application/json")).status,
      (await post(chunked, "application/json")).status,
      (await post(big, "application/octet-stream")).status,
    ];
    expect(statuses).toEqual([204, 204, 204, 204, 204]);
    expect(seen).toEqual([json, form, big, json, big]);
  } finally {
    await probe.stop(true);
  }
});
