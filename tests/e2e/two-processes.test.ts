// Two `roost serve` processes on one database file behave as one (docs/operations.md "Several processes"): state
// written through either is visible through the other, and concurrent writes through both lose
// nothing. Later sections add builds, job claims, webhook dedupe and logs. With
// ROOST_TEST_DATABASE=sqld (scripts/test) the same two share a libSQL server instead of the file.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { createGithubProject } from "../helpers/ci-daemon.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SseReader } from "../helpers/sse.ts";
import { startSqld, testDatabase, type Sqld } from "../support/sqld.ts";

const dataDir = mkdtempSync(join(tmpdir(), "roost-two-"));
const WEBHOOK_SECRET = "two-processes-webhook-secret";
let projectId = "";
let a: Daemon;
let b: Daemon;
let owner = "";
let host: HostApiStandIn;
let sqld: Sqld | undefined;

beforeAll(async () => {
  host = await startHostApiStandIn();
  host.github.repos.push({ id: 4242, full_name: "acme/app", default_branch: "main", private: true });
  if (testDatabase() === "sqld") sqld = await startSqld();
  const env: Record<string, string> = sqld ? { ROOST_DATABASE_URL: sqld.url } : {};
  // Started together, as a service manager would: both migrate and prepare first run at once.
  [a, b] = await Promise.all([startDaemon({ dataDir, cleanup: false, env }), startDaemon({ dataDir, cleanup: false, env })]);
  owner = (await http(a.url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } })).body.session_token;
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await host?.stop();
  await sqld?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("two daemons, one database", () => {
  test("both are ready, and a session made on one works on the other", async () => {
    expect((await http(a.url, "GET", "/readyz")).status).toBe(200);
    expect((await http(b.url, "GET", "/readyz")).status).toBe(200);
    const me = await http(b.url, "GET", "/v1/users/me", { token: owner });
    expect(me.status).toBe(200);
    expect(me.body.user.email).toBe("owner@example.test");
  });

  test("100 token creations spread over both processes all land, each once", async () => {
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        http(i % 2 ? a.url : b.url, "POST", "/v1/api-tokens", { token: owner, body: { name: `t${i}`, role: "developer" } }),
      ),
    );
    expect(results.every((r) => r.status === 201)).toBe(true);
    const listed = await http(a.url, "GET", "/v1/api-tokens?limit=200", { token: owner });
    expect(listed.body.total).toBe(100);
    expect(new Set(listed.body.tokens.map((t: { name: string }) => t.name)).size).toBe(100);
  });

  test("a revocation on one process is refused at once on the other", async () => {
    const created = await http(a.url, "POST", "/v1/api-tokens", { token: owner, body: { name: "cross", role: "developer" } });
    expect((await http(b.url, "GET", "/v1/users/me", { token: created.body.token })).status).toBe(200);
    await http(b.url, "DELETE", `/v1/api-tokens/${created.body.id}`, { token: owner });
    expect((await http(a.url, "GET", "/v1/users/me", { token: created.body.token })).body.code).toBe("invalid_token");
  });

  test("50 builds created through both processes at once are numbered 1..50, each once", async () => {
    const project = await createGithubProject([a.url, b.url, a.url], owner, host, WEBHOOK_SECRET);
    const pipeline = (
      await http(b.url, "POST", `/v1/projects/${project.id}/pipelines`, { token: owner, body: { name: "all", trigger_config: { branches: ["**"] } } })
    ).body.pipeline;
    projectId = project.id;
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        http(i % 2 ? a.url : b.url, "POST", `/v1/projects/${project.id}/builds`, {
          token: owner,
          body: { pipeline_id: pipeline.id, commit_sha: "d".repeat(40) },
        }),
      ),
    );
    expect(results.every((r) => r.status === 201)).toBe(true);
    expect(results.map((r) => r.body.build.build_number).sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });

  test("the same webhook delivery sent to both processes at once creates one build", async () => {
    const body = JSON.stringify({
      ref: "refs/heads/main",
      deleted: false,
      after: "e".repeat(40),
      head_commit: { id: "e".repeat(40), message: "two processes" },
      commits: [],
      repository: { id: 4242, full_name: "acme/app" },
      pusher: { name: "dev" },
    });
    const signature = await sign(WEBHOOK_SECRET, body);
    const delivery = crypto.randomUUID();
    const send = (url: string) =>
      fetch(`${url}/v1/webhooks/github`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": delivery, "x-hub-signature-256": signature },
        body,
      }).then((r) => r.json() as Promise<{ duplicate: boolean }>);
    const answers = await Promise.all([send(a.url), send(b.url), send(a.url), send(b.url)]);
    expect(answers.filter((x) => !x.duplicate)).toHaveLength(1);
    const builds = (await http(a.url, "GET", `/v1/projects/${projectId}/builds?trigger_type=webhook`, { token: owner })).body;
    expect(builds.builds).toHaveLength(1);
    // And a redelivery later, to the other process, is still a duplicate.
    expect((await send(b.url)).duplicate).toBe(true);
  });

  test("a runner claims and appends through one process while a viewer on the other sees every line (within the documented ~1 s)", async () => {
    const created = (await http(a.url, "POST", "/v1/runners", { token: owner, body: { name: "linux" } })).body;
    const runner = { id: created.runner.id, token: created.token };
    await http(a.url, "POST", `/v1/runners/${runner.id}/connect`, { token: runner.token, body: { capabilities: { os: "linux", arch: "x64" } } });
    // Both processes race to hand out work: each build goes to one claim only.
    const claims = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        http(i % 2 ? a.url : b.url, "POST", `/v1/runners/${runner.id}/jobs/claim`, {
          token: runner.token,
          body: { claim_id: crypto.randomUUID(), wait_seconds: 0 },
        }),
      ),
    );
    const claimed = claims.filter((c) => c.status === 201).map((c) => c.body.job);
    expect(new Set(claimed.map((j) => j.build.id)).size).toBe(claimed.length);
    const job = claimed[0];
    const { token } = (await http(b.url, "POST", `/v1/builds/${job.build.id}/stream-token`, { token: owner })).body;
    const viewer = new SseReader(await fetch(`${b.url}/v1/builds/${job.build.id}/logs/stream?token=${token}`));
    await viewer.until((e) => e.some((x) => x.event === "status"));
    const sentAt = Date.now();
    await http(a.url, "POST", `/v1/runners/${runner.id}/jobs/${job.job_id}/logs`, {
      token: runner.token,
      body: { first_line: 0, lines: [{ text: "from process A" }, { text: "second" }] },
    });
    await viewer.until((e) => e.filter((x) => x.event === "log").length >= 2, 5000);
    expect(Date.now() - sentAt).toBeLessThan(3000);
    expect(viewer.logs().map((l) => l.text)).toEqual(["from process A", "second"]);
    await viewer.cancel();
  });

  test("one process serves the management socket; a capability it mints is valid for both", async () => {
    const minted = await a.cli(["recover"]);
    expect(minted.code).toBe(0);
    expect(minted.stdout.trim()).toMatch(/^roost_rcv_/);
  });
});
