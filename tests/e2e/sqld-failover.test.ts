// Three `roost serve` on one libSQL server (sqld), as three hosts behind a load balancer
// (docs/operations.md "Several hosts"): one is killed with SIGKILL while runners stream their logs
// through all three, and the runners it served carry on through the other two, as they would
// through a load balancer that stops sending to a dead host. The job's state (its lease, the
// lines acknowledged) is in the database, so another daemon finishes the jobs the dead one started:
// every build succeeds, and every log has each of its lines once, in order.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { startSqld, type Sqld } from "../support/sqld.ts";

let sqld: Sqld;
let host: HostApiStandIn;
let daemons: Daemon[] = [];
let owner = "";

beforeAll(async () => {
  sqld = await startSqld();
  host = await startHostApiStandIn();
  host.github.repos.push({ id: 4343, full_name: "acme/fleet", default_branch: "main", private: true });
  const env = { ROOST_SECRET_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64") };
  const port = new URL(sqld.url).port;
  // Two over WebSocket, one over HTTP.
  daemons = await Promise.all(
    [`libsql://127.0.0.1:${port}?tls=0`, sqld.url, `libsql://127.0.0.1:${port}?tls=0`].map((url) =>
      startDaemon({ env: { ...env, ROOST_DATABASE_URL: url, ROOST_LOG_LEVEL: "info" } }),
    ),
  );
  owner = (await http(daemons[0]!.url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } })).body.session_token;
}, 60_000);
afterAll(async () => {
  await Promise.all(daemons.map((d) => d.stop()));
  await host?.stop();
  await sqld?.stop();
});

describe("three daemons on one sqld, one killed mid-stream", () => {
  test("the jobs the killed daemon served are streamed on and finished through the other two", async () => {
    const [a, b, c] = daemons as [Daemon, Daemon, Daemon];
    const integration = await http(a.url, "POST", "/v1/integrations", {
      token: owner,
      body: {
        provider: "github",
        name: "gh",
        api_url: host.url,
        app_id: host.github.appId,
        installation_id: host.github.installationId,
        private_key: host.github.privateKeyPem,
        webhook_secret: "failover-webhook-secret",
      },
    });
    expect({ status: integration.status, body: integration.status === 201 ? null : integration.body }).toEqual({ status: 201, body: null });
    const listedRepos = await http(b.url, "GET", "/v1/integration-repositories", { token: owner });
    const repo = listedRepos.body.repositories?.[0];
    if (!repo) throw new Error(JSON.stringify(listedRepos.body));
    const project = (await http(c.url, "POST", "/v1/projects", { token: owner, body: { repository_id: repo.id } })).body.project;
    const pipeline = (
      await http(a.url, "POST", `/v1/projects/${project.id}/pipelines`, {
        token: owner,
        body: { name: "fleet", trigger_config: { branches: ["**"] }, concurrency: { max_concurrent: 100 } },
      })
    ).body.pipeline;
    const RUNNERS = 9;
    const BUILDS = RUNNERS;
    for (let i = 0; i < BUILDS; i++) {
      const res = await http(daemons[i % 3]!.url, "POST", `/v1/projects/${project.id}/builds`, {
        token: owner,
        body: { pipeline_id: pipeline.id, commit_sha: "f".repeat(40) },
      });
      expect(res.status).toBe(201);
    }

    // What a load balancer does for a runner: its host first, and the next live one when a host
    // does not answer (connection refused or reset: nginx's `proxy_next_upstream error`).
    const dead = new Set<string>();
    const answers: string[] = [];
    const served = new Map<string, { claimedBy: string; finishedBy: string }>();
    async function call(home: number, runner: { id: string; token: string }, path: string, body: unknown): Promise<{ status: number; body: any; by: string }> {
      for (let k = 0; k < 3; k++) {
        const d = daemons[(home + k) % 3]!;
        if (dead.has(d.url)) continue;
        try {
          const res = await http(d.url, "POST", `/v1/runners/${runner.id}${path}`, { token: runner.token, body });
          answers.push(`${path.split("/").pop()} ${res.status}${res.status >= 500 ? ` ${JSON.stringify(res.body)}` : ""}`);
          return { ...res, by: d.url };
        } catch {
          dead.add(d.url);
        }
      }
      throw new Error("no daemon answers");
    }

    const ROUNDS = 10;
    const LINES = 8;
    let streaming = 0;
    const allStreaming = Promise.withResolvers<void>();
    const work = async (i: number) => {
      const made = (await http(a.url, "POST", "/v1/runners", { token: owner, body: { name: `fleet-${i}` } })).body;
      const runner = { id: made.runner.id as string, token: made.token as string };
      const home = i % 3;
      await call(home, runner, "/connect", { capabilities: { os: "linux", arch: "x64" } });
      const claim = await call(home, runner, "/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 });
      expect(claim.status).toBe(201);
      const job = claim.body.job;
      for (let round = 0; round < ROUNDS; round++) {
        const lines = Array.from({ length: LINES }, (_, n) => ({ step: "build", text: `line ${round * LINES + n} of ${job.build.id}` }));
        const appended = await call(home, runner, `/jobs/${job.job_id}/logs`, { first_line: round * LINES, lines });
        expect(appended.status).toBeLessThan(300);
        await call(home, runner, "/heartbeat", { job_ids: [job.job_id] });
        if (round === 1 && ++streaming === RUNNERS) allStreaming.resolve();
        await Bun.sleep(60);
      }
      const finished = await call(home, runner, `/jobs/${job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: ROUNDS * LINES });
      expect(finished.status).toBe(200);
      served.set(job.build.id, { claimedBy: claim.by, finishedBy: finished.by });
    };
    const running = Promise.all(Array.from({ length: RUNNERS }, (_, i) => work(i)));
    // Every runner has streamed two rounds: the first daemon dies, no shutdown, no goodbye.
    await allStreaming.promise;
    a.process.kill("SIGKILL");
    await a.process.exited;
    await running;

    expect(dead).toEqual(new Set([a.url]));
    expect(answers.filter((x) => !/ 20[0124]$/.test(x))).toEqual([]);
    // The runners whose host was the killed daemon: claimed through it, finished through another.
    const moved = [...served.values()].filter((s) => s.claimedBy === a.url);
    expect(moved.length).toBe(RUNNERS / 3);
    expect(moved.every((s) => s.finishedBy !== a.url)).toBe(true);
    const listed = (await http(b.url, "GET", `/v1/projects/${project.id}/builds?limit=100`, { token: owner })).body.builds;
    expect(listed.map((x: { status: string }) => x.status)).toEqual(Array(BUILDS).fill("succeeded"));
    for (const id of served.keys()) {
      const log: { stream: string; text: string }[] = (await http(c.url, "GET", `/v1/builds/${id}/logs`, { token: owner })).body;
      expect(log.filter((l) => l.stream !== "system").map((l) => l.text)).toEqual(Array.from({ length: ROUNDS * LINES }, (_, n) => `line ${n} of ${id}`));
    }
    for (const d of [b, c]) expect((await http(d.url, "GET", "/readyz")).status).toBe(200);
  }, 90_000);
});
