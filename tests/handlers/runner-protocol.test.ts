// The runner protocol over HTTP (docs/runners.md "Protocol"): registration, claim and routing,
// fencing, idempotent log appends, step results, finishing, cancel, lost runners.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { userWithRole, type TestApp } from "../helpers/app.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, createPipeline, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import { flagUnroutableBuilds, reapLostJobs } from "../../lib/runners/reaper.ts";

let t: TestApp;
let host: HostApiStandIn;
let owner: string;
let projectId: string;
let fixture: CiFixture;
beforeAll(async () => {
  fixture = await startCiFixture({ ROOST_RUNNER_LEASE_SECONDS: "30", ROOST_MAX_BUILD_LOG_BYTES: "2048", ROOST_MAX_ARTIFACT_BYTES: "4096" });
  ({ t, host, owner, projectId } = fixture);
});
afterAll(() => fixture.stop());

async function runner(os: "linux" | "macos" = "linux", labels: string[] = [], xcode: string | null = null) {
  const created = await t.call("POST", "/v1/runners", { token: owner, body: { name: `r-${crypto.randomUUID().slice(0, 6)}`, labels } });
  const { id } = created.body.runner;
  const token: string = created.body.token;
  await t.call("POST", `/v1/runners/${id}/connect`, {
    token,
    body: { capabilities: { os, arch: "x64", flutter_versions: ["3.24.5"], xcode }, version: "test" },
  });
  const call = (method: string, path: string, body?: unknown) => t.call(method, `/v1/runners/${id}${path}`, { token, body });
  return { id, token, call, claim: (claimId = crypto.randomUUID()) => call("POST", "/jobs/claim", { claim_id: claimId, wait_seconds: 0 }) };
}

async function queuedBuild(pipelineBody: Record<string, unknown> = {}) {
  const pipeline = await createPipeline(t, owner, projectId, pipelineBody);
  return (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body.build;
}

async function drainQueue() {
  // Cancel whatever earlier tests left queued, so each test claims its own build.
  const queued = (await t.call("GET", `/v1/projects/${projectId}/builds?status=queued&limit=200`, { token: owner })).body.builds;
  for (const b of queued) await t.call("POST", `/v1/builds/${b.id}/cancel`, { token: owner });
}

/** A new build's job, claimed by a new runner once the queue is empty; `logs` appends lines to it as that runner. */
async function running() {
  await drainQueue();
  const r = await runner();
  const build = await queuedBuild();
  const job = (await r.claim()).body.job;
  const logs = (first_line: number, texts: string[]) =>
    r.call("POST", `/jobs/${job.job_id}/logs`, { first_line, lines: texts.map((text) => ({ step: "build", text })) });
  return { r, build, job, logs };
}

describe("registration", () => {
  test("an admin registers a runner and sees its token once; others cannot", async () => {
    const res = await t.call("POST", "/v1/runners", { token: owner, body: { name: "mac-mini-1", labels: ["xcode-16"] } });
    expect(res.status).toBe(201);
    expect(res.body.token).toMatch(/^roost_rt_[0-9A-Za-z]{58}$/);
    expect(res.body.runner).toMatchObject({ name: "mac-mini-1", labels: ["xcode-16"], last_seen_at: null, revoked_at: null });
    const listed = await t.call("GET", "/v1/runners", { token: owner });
    expect(listed.text).not.toContain(res.body.token);
    const dev = await userWithRole(t, owner, "developer");
    expect((await t.call("POST", "/v1/runners", { token: dev.token, body: { name: "x" } })).status).toBe(403);
  });

  test("a runner token works only on its own paths; rotation and revocation take effect at once", async () => {
    const a = await runner();
    const b = await runner();
    const cross = await t.call("POST", `/v1/runners/${b.id}/heartbeat`, { token: a.token, body: {} });
    expect(cross.status).toBe(403);
    expect(cross.body).toEqual({ code: "forbidden", message: "This runner token belongs to another runner." });
    const rotated = await t.call("POST", `/v1/runners/${a.id}/token`, { token: owner });
    expect((await a.call("POST", "/heartbeat", {})).body.code).toBe("invalid_token");
    expect((await t.call("POST", `/v1/runners/${a.id}/heartbeat`, { token: rotated.body.token, body: {} })).status).toBe(200);
    await t.call("DELETE", `/v1/runners/${a.id}`, { token: owner });
    expect((await t.call("POST", `/v1/runners/${a.id}/heartbeat`, { token: rotated.body.token, body: {} })).status).toBe(401);
    // A user session is not a runner credential, nor the other way round.
    expect((await t.call("POST", `/v1/runners/${b.id}/heartbeat`, { token: owner, body: {} })).status).toBe(401);
    expect((await t.call("GET", "/v1/users/me", { token: b.token })).status).toBe(401);
  });
});

describe("last seen", () => {
  test("a runner's calls record when it was last seen, writing once a second at most", async () => {
    const r = await runner();
    t.clock.advance(1);
    const before = t.db.commits;
    for (let i = 0; i < 5; i++) expect((await r.call("POST", "/heartbeat", {})).status).toBe(200);
    expect(t.db.commits - before).toBe(1);
    const seen = async () => (await t.call("GET", "/v1/runners", { token: owner })).body.runners.find((x: { id: string }) => x.id === r.id).last_seen_at;
    expect(await seen()).toBe(t.clock.now());
    t.clock.advance(1);
    await r.call("POST", "/heartbeat", {});
    expect(await seen()).toBe(t.clock.now());
    expect(t.db.commits - before).toBe(2);
  });
});

describe("claiming", () => {
  test("a runner claims the oldest queued build: it starts running with the frozen config and revealed secrets", async () => {
    await drainQueue();
    const r = await runner();
    expect((await r.claim()).status).toBe(204);
    const build = await queuedBuild({ execution_config: { env: [{ key: "API_KEY", value: "top-secret-value", secret: true }] } });
    const claimId = crypto.randomUUID();
    const res = await r.claim(claimId);
    expect(res.status).toBe(201);
    expect(res.body.job).toMatchObject({
      lease_seconds: 30,
      next_line: 0,
      build: { id: build.id, commit_sha: SHA_A, branch: "main", repository_full_name: "acme/app" },
    });
    expect(res.body.job.config.execution_config.env).toEqual([{ key: "API_KEY", value: "top-secret-value", secret: true }]);
    // A private https repository comes with short-lived clone credentials: an installation token
    // the runner may only read this repository with.
    expect(res.body.job.clone_credentials).toEqual({ username: "x-access-token", password: "ghs_standin_installation_token" });
    const tokenRequest = host.requests.filter((r) => r.path.endsWith("/access_tokens")).pop()!;
    expect(tokenRequest.body).toEqual({ repository_ids: [1001], permissions: { contents: "read" } });
    const now = (await t.call("GET", `/v1/builds/${build.id}`, { token: owner })).body.build;
    expect(now).toMatchObject({ status: "running", runner_id: r.id, started_at: t.clock.now() });
    expect(now.config_snapshot.execution_config.env[0].value).toBe("");
    // A lost response: the same claim_id gets the same job back.
    const again = await r.claim(claimId);
    expect(again.body.job.job_id).toBe(res.body.job.job_id);
    // Nobody else gets it.
    expect((await (await runner()).claim()).status).toBe(204);
  });

  test("ios builds go only to a macOS runner with Xcode; runner_labels must match", async () => {
    await drainQueue();
    const ios = await queuedBuild({ execution_config: { platforms: ["ios"] } });
    const linux = await runner("linux");
    expect((await linux.claim()).status).toBe(204);
    const macNoXcode = await runner("macos");
    expect((await macNoXcode.claim()).status).toBe(204);
    const mac = await runner("macos", [], "16.2");
    expect((await mac.claim()).body.job.build.id).toBe(ios.id);

    const labelled = await queuedBuild({ execution_config: { runner_labels: ["gpu"] } });
    expect((await linux.claim()).status).toBe(204);
    const gpu = await runner("linux", ["gpu"]);
    expect((await gpu.claim()).body.job.build.id).toBe(labelled.id);
  });

  test("a build nobody can take gets a block reason and raises an incident instead of waiting silently", async () => {
    await drainQueue();
    await runner("linux");
    const build = await queuedBuild({ name: "macOS app", execution_config: { platforms: ["macos"], runner_labels: ["mac-fleet"] } });
    t.clock.advance(31);
    await flagUnroutableBuilds(t.ctx);
    const after = (await t.call("GET", `/v1/builds/${build.id}`, { token: owner })).body.build;
    expect(after.status).toBe("queued");
    expect(after.runner_policy_block_reason).toContain("macos builds need a macOS runner");
    const incidents = (await t.call("GET", "/v1/operator-incidents?status=open", { token: owner })).body.incidents;
    expect(
      incidents.find((i: { reason: string; resource_id: string }) => i.reason === "no_runner_for_build" && i.resource_id === build.pipeline_id),
    ).toBeDefined();
  });
});

describe("logs, steps and finishing", () => {
  test("appends are idempotent: a retry or an overlap stores each line once; a gap is 416 with where to resume", async () => {
    const { build, logs } = await running();
    const first = await logs(0, ["one", "two", "three"]);
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ next_line: 3, last_seq: 3, accepted: 3 });
    expect(first.headers.get("x-roost-job-status")).toBe("running");
    expect((await logs(0, ["one", "two", "three"])).body).toEqual({ next_line: 3, last_seq: 3, accepted: 0 });
    const gap = await logs(5, ["six"]);
    expect(gap.status).toBe(416);
    expect(gap.body).toEqual({ code: "log_gap", message: "Lines from 3 are missing; resend from line 3." });
    expect(gap.headers.get("x-roost-log-next-line")).toBe("3");
    expect((await logs(2, ["three", "four", "five"])).body).toEqual({ next_line: 5, last_seq: 5, accepted: 2 });
    const text = await t.call("GET", `/v1/builds/${build.id}/logs`, { token: owner, headers: { accept: "text/plain" } });
    expect(text.text).toBe("one\ntwo\nthree\nfour\nfive\n");
    const json = await t.call("GET", `/v1/builds/${build.id}/logs?after_seq=1&limit=2`, { token: owner });
    expect(json.body.map((e: { seq: number; text: string }) => [e.seq, e.text])).toEqual([
      [2, "two"],
      [3, "three"],
    ]);
    expect(json.body[0]).toMatchObject({ step: "build", stream: "stdout", line: 1 });
  });

  test("steps are recorded; finishing needs every line, then sets the status and exit code", async () => {
    const { r, build, job, logs } = await running();
    await logs(0, ["a", "b"]);
    const step = await r.call("PUT", `/jobs/${job.job_id}/steps/pre_build`, {
      status: "succeeded",
      exit_code: 0,
      started_at: 100,
      finished_at: 103,
      duration_ms: 3000,
    });
    expect(step.body.step_results).toEqual([{ name: "pre_build", status: "succeeded", exit_code: 0, started_at: 100, finished_at: 103, duration_ms: 3000 }]);
    const early = await r.call("POST", `/jobs/${job.job_id}/finish`, { status: "failed", exit_code: 2, line_count: 3 });
    expect(early.status).toBe(409);
    expect(early.body).toEqual({ code: "log_incomplete", message: "Roost has 2 of 3 lines; send the rest, then finish." });
    await logs(2, ["c"]);
    const done = await r.call("POST", `/jobs/${job.job_id}/finish`, { status: "failed", exit_code: 2, line_count: 3 });
    expect(done.status).toBe(200);
    expect(done.body.build).toMatchObject({ id: build.id, status: "failed", exit_code: 2, finished_at: t.clock.now() });
    expect((await r.call("POST", `/jobs/${job.job_id}/finish`, { status: "failed", exit_code: 2, line_count: 3 })).body.build.status).toBe("failed");
    const late = await logs(3, ["d"]);
    expect(late.status).toBe(410);
    expect(late.body.code).toBe("job_finished");
  });

  test("another runner's calls on a job are refused (fencing)", async () => {
    const { job } = await running();
    const other = await runner();
    const res = await other.call("POST", `/jobs/${job.job_id}/logs`, { first_line: 0, lines: [{ text: "intruder" }] });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ code: "job_not_assigned", message: "This job is not assigned to this runner." });
  });

  test("cancel reaches the runner in the next heartbeat and in the next append's X-Roost-Job-Status; the build stays canceled", async () => {
    const { r, build, job, logs } = await running();
    await t.call("POST", `/v1/builds/${build.id}/cancel`, { token: owner });
    expect((await r.call("POST", "/heartbeat", { job_ids: [job.job_id] })).body.cancel).toEqual([job.job_id]);
    const append = await logs(0, ["last words"]);
    expect(append.headers.get("x-roost-job-status")).toBe("canceling");
    const done = await r.call("POST", `/jobs/${job.job_id}/finish`, { status: "canceled", exit_code: 143, line_count: 1 });
    expect(done.body.build).toMatchObject({ status: "canceled" });
  });

  test("past the cap the head and the tail are kept, and the cut is marked where it happened", async () => {
    const { build, logs } = await running();
    const lines = Array.from({ length: 200 }, (_, i) => `line ${String(i).padStart(3, "0")} ${"x".repeat(40)}`);
    for (let i = 0; i < lines.length; i += 50) await logs(i, lines.slice(i, i + 50));
    const text = (await t.call("GET", `/v1/builds/${build.id}/logs`, { token: owner, headers: { accept: "text/plain" } })).text;
    expect(Buffer.byteLength(text)).toBeLessThan(2048 + 200);
    expect(text.startsWith("line 000")).toBe(true);
    expect(text.trimEnd().endsWith(lines[199]!)).toBe(true);
    expect(text).toMatch(/\[roost\] \d+ lines \(\d+ bytes\) were cut here/);
    const json = (await t.call("GET", `/v1/builds/${build.id}/logs`, { token: owner })).body;
    expect(json.some((e: { stream: string; seq: number | null }) => e.stream === "system" && e.seq === null)).toBe(true);
  });
});

describe("artifacts", () => {
  test("uploaded with a checksum, listed and downloaded by project viewers; bad uploads are refused and not recorded", async () => {
    const { r, build, job } = await running();
    const content = "PK\u0003\u0004 fake apk";
    const sha = new Bun.CryptoHasher("sha256").update(content).digest("hex");
    const upload = (path: string, body: string, digest = sha) =>
      t.call("PUT", `/v1/runners/${r.id}/jobs/${job.job_id}/artifacts?path=${encodeURIComponent(path)}`, {
        token: r.token,
        raw: body,
        contentType: "application/octet-stream",
        headers: { "x-roost-artifact-sha256": digest },
      });
    const ok = await upload("build/app/app-release.apk", content);
    expect(ok.status).toBe(201);
    expect(ok.body.artifact).toMatchObject({ path: "build/app/app-release.apk", size: Buffer.byteLength(content), sha256: sha });
    expect((await upload("build/app/app-release.apk", content)).body.code).toBe("artifact_exists");
    const wrong = await upload("other.apk", content, "0".repeat(64));
    expect(wrong.status).toBe(422);
    expect(wrong.body.code).toBe("artifact_checksum_mismatch");
    expect((await upload("../../etc/passwd", content)).status).toBe(400);
    const big = "x".repeat(5000);
    expect((await upload("big.bin", big, new Bun.CryptoHasher("sha256").update(big).digest("hex"))).body.code).toBe("payload_too_large");
    const listed = await t.call("GET", `/v1/builds/${build.id}/artifacts`, { token: owner });
    expect(listed.body.artifacts.map((a: { path: string }) => a.path)).toEqual(["build/app/app-release.apk"]);
    const download = await t.call("GET", `/v1/builds/${build.id}/artifacts/${ok.body.artifact.id}`, { token: owner });
    expect(download.text).toBe(content);
    expect(download.headers.get("x-roost-artifact-sha256")).toBe(sha);
    const outsider = await userWithRole(t, owner, "developer");
    expect((await t.call("GET", `/v1/builds/${build.id}/artifacts`, { token: outsider.token })).status).toBe(404);
    expect((await t.call("GET", `/v1/builds/${build.id}/artifacts/${ok.body.artifact.id}`, { token: outsider.token })).status).toBe(404);
  });
});

describe("lost runners", () => {
  test("a runner silent past its lease: the build fails with the reason, the log says so, an incident is raised", async () => {
    const { r, build, job } = await running();
    t.clock.advance(20);
    await r.call("POST", "/heartbeat", { job_ids: [job.job_id] });
    t.clock.advance(25);
    await reapLostJobs(t.ctx); // (other tests' abandoned jobs are reaped here too)
    expect((await t.call("GET", `/v1/builds/${build.id}`, { token: owner })).body.build.status).toBe("running"); // the heartbeat renewed the lease
    t.clock.advance(10);
    expect(await reapLostJobs(t.ctx)).toBe(1);
    const failed = (await t.call("GET", `/v1/builds/${build.id}`, { token: owner })).body.build;
    expect(failed).toMatchObject({ status: "failed", exit_code: -1 });
    expect(failed.failure_reason).toMatch(/^runner_lost: runner r-\w+ sent no heartbeat for 30 s$/);
    const log = (await t.call("GET", `/v1/builds/${build.id}/logs`, { token: owner, headers: { accept: "text/plain" } })).text;
    expect(log).toContain("[roost] runner_lost");
    const incidents = (await t.call("GET", "/v1/operator-incidents?status=open", { token: owner })).body.incidents;
    expect(incidents.find((i: { reason: string; resource_id: string }) => i.reason === "runner_lost" && i.resource_id === r.id)).toMatchObject({
      severity: "critical",
    });
    const late = await r.call("POST", `/jobs/${job.job_id}/logs`, { first_line: 0, lines: [{ text: "back from the dead" }] });
    expect(late.status).toBe(410);
  });
});
