// Graceful shutdown of long-lived responses and the runner/log/SSE metrics (docs/operations.md "Health and metrics").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type TestApp } from "../helpers/app.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, createPipeline, createProject, startGithubFixture } from "../helpers/ci.ts";
import { createApp } from "../../lib/http/app.ts";
import { routes } from "../../handlers/routes.ts";

let t: TestApp;
let host: HostApiStandIn;
let owner = "";
let runner = { id: "", token: "" };
let buildId = "";
let jobId = "";
const shutdown = new AbortController();
let app: ReturnType<typeof createApp>;
const call = async (method: string, path: string, token: string, body?: unknown) => {
  const res = await app.fetch(
    new Request(`http://127.0.0.1:8080${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    }),
    "127.0.0.1",
  );
  return res;
};

beforeAll(async () => {
  ({ t, host, owner } = await startGithubFixture());
  const project = await createProject(t, owner);
  const pipeline = await createPipeline(t, owner, project.id);
  buildId = (await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body.build.id;
  const created = (await t.call("POST", "/v1/runners", { token: owner, body: { name: "r" } })).body;
  runner = { id: created.runner.id, token: created.token };
  app = createApp({ ...t.ctx, shutdown: shutdown.signal }, routes);
  await call("POST", `/v1/runners/${runner.id}/connect`, runner.token, { capabilities: { os: "linux", arch: "x64" } });
  jobId = (
    (await (await call("POST", `/v1/runners/${runner.id}/jobs/claim`, runner.token, { claim_id: "shutdown-claim", wait_seconds: 0 })).json()) as {
      job: { job_id: string };
    }
  ).job.job_id;
  await call("POST", `/v1/runners/${runner.id}/jobs/${jobId}/logs`, runner.token, { first_line: 0, lines: [{ text: "hello" }] });
});
afterAll(async () => {
  t.close();
  await host.stop();
});

describe("metrics of runners, logs and streams", () => {
  test("runners connected, log bytes ingested and open SSE streams are reported", async () => {
    const { token } = (await (await call("POST", `/v1/builds/${buildId}/stream-token`, owner)).json()) as { token: string };
    const stream = await app.fetch(new Request(`http://127.0.0.1:8080/v1/builds/${buildId}/logs/stream?token=${token}`), "127.0.0.1");
    const reader = stream.body!.getReader();
    await reader.read();
    const metrics = await (await app.fetch(new Request("http://127.0.0.1:8080/metrics"), "127.0.0.1")).text();
    expect(metrics).toContain("roost_runners_connected 1");
    expect(metrics).toContain("roost_log_bytes_ingested_total 6");
    expect(metrics).toMatch(/roost_sse_subscribers 1\b/);
    expect(metrics).toContain('roost_builds{status="running"} 1');
    await reader.cancel();
    // "The last minute" is on the daemon's clock, which recorded the runner's contact, not the
    // database's: a minute later by it, the runner is no longer counted.
    t.clock.advance(61);
    const later = await (await app.fetch(new Request("http://127.0.0.1:8080/metrics"), "127.0.0.1")).text();
    expect(later).toContain("roost_runners_connected 0");
  });
});

describe("graceful shutdown", () => {
  test("open streams end with a reconnect hint and waiting long polls return at once", async () => {
    const { token } = (await (await call("POST", `/v1/builds/${buildId}/stream-token`, owner)).json()) as { token: string };
    const stream = await app.fetch(new Request(`http://127.0.0.1:8080/v1/builds/${buildId}/logs/stream?token=${token}&last_event_id=1`), "127.0.0.1");
    const reader = stream.body!.getReader();
    await reader.read();
    const otherRunner = (await t.call("POST", "/v1/runners", { token: owner, body: { name: "idle" } })).body;
    await call("POST", `/v1/runners/${otherRunner.runner.id}/connect`, otherRunner.token, { capabilities: { os: "linux", arch: "x64" } });
    const started = Date.now();
    const poll = call("POST", `/v1/runners/${otherRunner.runner.id}/jobs/claim`, otherRunner.token, { claim_id: "waiting-claim", wait_seconds: 25 });
    await Bun.sleep(200);
    shutdown.abort();
    expect((await poll).status).toBe(204);
    expect(Date.now() - started).toBeLessThan(3000);
    let text = "";
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    expect(text).toContain("event: shutdown");
    expect(text).toContain("retry: 1000");
  });
});
