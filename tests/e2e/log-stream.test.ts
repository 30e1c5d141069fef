// The live log stream over a real socket (docs/runners.md "Live logs"): every line
// live and exactly once, resume with Last-Event-ID with no gap or duplicate, a connection that
// outlives Bun's 10 s idle timeout, the final event, 204 after the end, and the stream token's scope.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { claimJob, createGithubProject, loginOwner } from "../helpers/ci-daemon.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SseReader } from "../helpers/sse.ts";

let daemon: Daemon;
let host: HostApiStandIn;
let owner = "";
let buildId = "";
let otherBuildId = "";
let runner: { id: string; token: string };
let jobId = "";
let nextLine = 0;

async function append(texts: string[]) {
  const res = await http(daemon.url, "POST", `/v1/runners/${runner.id}/jobs/${jobId}/logs`, {
    token: runner.token,
    body: { first_line: nextLine, lines: texts.map((text) => ({ step: "build", text })) },
  });
  expect(res.status).toBe(202);
  nextLine = res.body.next_line;
}

async function open(options: { lastEventId?: string; build?: string } = {}) {
  const build = options.build ?? buildId;
  const { token } = (await http(daemon.url, "POST", `/v1/builds/${build}/stream-token`, { token: owner })).body;
  const headers: Record<string, string> = { accept: "text/event-stream" };
  if (options.lastEventId) headers["last-event-id"] = options.lastEventId;
  return fetch(`${daemon.url}/v1/builds/${buildId}/logs/stream?token=${token}`, { headers });
}

beforeAll(async () => {
  daemon = await startDaemon();
  host = await startHostApiStandIn();
  host.github.repos.push({ id: 9, full_name: "acme/app", default_branch: "main", private: true });
  owner = await loginOwner(daemon.url);
  const project = await createGithubProject(daemon.url, owner, host);
  const pipeline = (
    await http(daemon.url, "POST", `/v1/projects/${project.id}/pipelines`, { token: owner, body: { name: "android", concurrency: { max_concurrent: 5 } } })
  ).body.pipeline;
  buildId = (
    await http(daemon.url, "POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: "a".repeat(40) } })
  ).body.build.id;
  otherBuildId = (
    await http(daemon.url, "POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: "b".repeat(40) } })
  ).body.build.id;
  const created = (await http(daemon.url, "POST", "/v1/runners", { token: owner, body: { name: "linux-1" } })).body;
  runner = { id: created.runner.id, token: created.token };
  const claimed = await claimJob(daemon.url, runner, { capabilities: { os: "linux", arch: "x64" } });
  expect(claimed.build.id).toBe(buildId);
  jobId = claimed.job_id;
});
afterAll(async () => {
  await daemon?.stop();
  await host?.stop();
});

describe("the log stream", () => {
  test("is text/event-stream, unbuffered by proxies, and starts with the status", async () => {
    const res = await open();
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    expect(res.headers.get("cache-control")).toContain("no-cache");
    const sse = new SseReader(res);
    const events = await sse.until((e) => e.some((x) => x.event === "status"));
    expect(JSON.parse(events.find((x) => x.event === "status")!.data)).toEqual({ status: "running", exit_code: null });
    await sse.cancel();
  });

  test("lines appended while watching arrive live, in order, each once, with their seq as the id", async () => {
    const sse = new SseReader(await open());
    await append(["alpha", "beta"]);
    await sse.until((e) => e.filter((x) => x.event === "log").length >= 2);
    await append(["gamma"]);
    await append(["gamma", "delta"].slice(1)); // the next batch
    await sse.until((e) => e.filter((x) => x.event === "log").length >= 4);
    expect(sse.logs().map((l) => [l.seq, l.text])).toEqual([
      [1, "alpha"],
      [2, "beta"],
      [3, "gamma"],
      [4, "delta"],
    ]);
    expect(sse.events.filter((x) => x.event === "log").map((x) => x.id)).toEqual(["1", "2", "3", "4"]);
    await sse.cancel();
  });

  test("a reconnect with Last-Event-ID resumes after that line: no gap, no duplicate", async () => {
    await append(["epsilon", "zeta"]);
    const sse = new SseReader(await open({ lastEventId: "3" }));
    await sse.until((e) => e.filter((x) => x.event === "log").length >= 3);
    expect(sse.logs().map((l) => l.text)).toEqual(["delta", "epsilon", "zeta"]);
    await sse.cancel();
  });

  test("a quiet stream outlives Bun's 10 s idle timeout and still delivers", async () => {
    const sse = new SseReader(await open({ lastEventId: "6" }));
    await sse.until((e) => e.some((x) => x.event === "status"));
    await Bun.sleep(11_500);
    await append(["after a long silence"]);
    await sse.until((e) => e.some((x) => x.event === "log"), 5000);
    expect(sse.logs().map((l) => l.text)).toEqual(["after a long silence"]);
    await sse.cancel();
  }, 30_000);

  test("when the build finishes the stream sends end and closes; reconnecting at the end is 204", async () => {
    const sse = new SseReader(await open({ lastEventId: "7" }));
    await append(["last line"]);
    const finish = await http(daemon.url, "POST", `/v1/runners/${runner.id}/jobs/${jobId}/finish`, {
      token: runner.token,
      body: { status: "succeeded", exit_code: 0, line_count: nextLine },
    });
    expect(finish.body.build.status).toBe("succeeded");
    await sse.until((e) => e.some((x) => x.event === "end"));
    expect(sse.logs().map((l) => l.text)).toEqual(["last line"]);
    expect(JSON.parse(sse.events.find((x) => x.event === "end")!.data)).toEqual({ status: "succeeded", exit_code: 0, last_seq: 8 });
    await sse.until(() => sse.closed);
    const again = await open({ lastEventId: "8" });
    expect(again.status).toBe(204);
    // A late viewer gets the whole log, then the end.
    const late = new SseReader(await open());
    await late.until((e) => e.some((x) => x.event === "end"));
    expect(late.logs()).toHaveLength(8);
  });

  test("the stream token is scoped: another build's token is 403, a bad one 401, none 401", async () => {
    const other = await open({ build: otherBuildId });
    expect(other.status).toBe(403);
    expect(await other.json()).toEqual({ code: "forbidden", message: "This stream token is for another build." });
    expect((await fetch(`${daemon.url}/v1/builds/${buildId}/logs/stream?token=roost_st_${"A".repeat(58)}`)).status).toBe(401);
    expect((await fetch(`${daemon.url}/v1/builds/${buildId}/logs/stream`)).status).toBe(401);
    // ...and it is no bearer credential elsewhere.
    const { token } = (await http(daemon.url, "POST", `/v1/builds/${buildId}/stream-token`, { token: owner })).body;
    expect((await http(daemon.url, "GET", `/v1/builds/${buildId}/logs`, { token })).status).toBe(401);
  });

  test("stream tokens never reach the logs", () => {
    expect(JSON.stringify(daemon.logs)).not.toMatch(/roost_st_[0-9A-Za-z]{58}/);
  });
});
