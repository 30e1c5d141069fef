// Roost on several hosts (docs/operations.md "Several hosts"), each a Linux network namespace with
// an address of its own on one LAN (tests/support/netns.ts): sqld on one, three `roost serve` on
// three others, sharing that database and one S3-compatible bucket (S3rver, run by this test at
// its own address on the LAN, like the runners and the load balancer it plays; the world of
// tests/helpers/several-hosts.ts).
//
// One daemon is killed with SIGKILL while runners stream their logs through all three, and the
// runners it served carry on through the other two, as they would through a load balancer that
// stops sending to a dead host. The job's state (its lease, the lines acknowledged) is in the
// database, so another daemon finishes the jobs the dead one started: every build succeeds, and
// every log has each of its lines once, in order. The artifacts uploaded through the dead daemon
// download byte for byte from the two others, and the logs, once archived to the bucket by a
// survivor, read the same from both. Its runners are this test's own HTTP clients, which go to
// the next daemon as a load balancer would; tests/e2e/several-hosts-real-runners.test.ts runs
// real `roost runner` processes behind a real nginx.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { http } from "../helpers/daemon.ts";
import { startSeveralHosts, type SeveralHosts } from "../helpers/several-hosts.ts";
import { num, one, run } from "../../lib/db/client.ts";
import { ARCHIVE_AFTER_SECONDS } from "../../lib/logs/archive.ts";

let world: SeveralHosts;

const sha256 = (bytes: Uint8Array | ArrayBuffer) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");

beforeAll(async () => {
  world = await startSeveralHosts({
    bucket: "roost-hosts",
    repository: { id: 4343, full_name: "acme/fleet", default_branch: "main", private: true },
    webhookSecret: "failover-webhook-secret",
  });
}, 90_000);
afterAll(async () => {
  await world?.stop();
});

describe("three hosts on one sqld and one bucket, one killed mid-stream", () => {
  test("the others finish its jobs, serve the artifacts uploaded through it, and the logs it streamed once archived", async () => {
    const { lan, s3, db, daemons, owner, project, waitFor } = world;
    const [a, b, c] = daemons;
    expect([a, b, c].map((d) => new URL(d.url).hostname)).toEqual([lan.hosts.a!.address, lan.hosts.b!.address, lan.hosts.c!.address]);
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

    // The runners whose host is a upload an artifact through it (2 MiB of random bytes each) before it dies.
    const uploaded: { buildId: string; artifactId: string; sha256: string; size: number }[] = [];
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
        if (round === 0 && home === 0) {
          const bytes = randomBytes(2 * 1024 * 1024);
          const digest = sha256(bytes);
          const res = await fetch(`${a.url}/v1/runners/${runner.id}/jobs/${job.job_id}/artifacts?path=build/app-release.apk`, {
            method: "PUT",
            headers: { authorization: `Bearer ${runner.token}`, "x-roost-artifact-sha256": digest, "content-type": "application/octet-stream" },
            body: bytes,
          });
          const stored = (await res.json()) as { artifact?: { id: string } };
          expect({ status: res.status, body: res.status === 201 ? null : stored }).toEqual({ status: 201, body: null });
          uploaded.push({ buildId: job.build.id, artifactId: stored.artifact!.id, sha256: digest, size: bytes.length });
        }
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

    // Artifacts: in the bucket, not on host a's disk, and the same bytes from b and from c.
    expect(uploaded.length).toBe(RUNNERS / 3);
    expect(existsSync(join(a.dataDir, "artifacts"))).toBe(false);
    const keys = await s3.keys();
    for (const artifact of uploaded) {
      expect(keys).toContain(`artifacts/${artifact.buildId}/${artifact.artifactId}`);
      for (const d of [b, c]) {
        const res = await fetch(`${d.url}/v1/builds/${artifact.buildId}/artifacts/${artifact.artifactId}`, { headers: { authorization: `Bearer ${owner}` } });
        expect(res.status).toBe(200);
        const bytes = await res.arrayBuffer();
        expect({ from: d.url, size: bytes.byteLength, sha256: sha256(bytes) }).toEqual({ from: d.url, size: artifact.size, sha256: artifact.sha256 });
      }
    }

    // Logs: a finished build's log moves to the bucket ARCHIVE_AFTER_SECONDS after it finished,
    // by the pass of a daemon still alive (every 10 s). The builds are made to have finished that
    // long ago (tests/handlers/logs-object-store.test.ts tests the delay itself), then the test
    // waits until every log is an object and no row of it is left in the database.
    const ids = [...served.keys()];
    const inIds = `(${ids.map(() => "?").join(",")})`;
    await run(db, `UPDATE builds SET finished_at = finished_at - ? WHERE id IN ${inIds}`, [ARCHIVE_AFTER_SECONDS, ...ids]);
    const count = async (sql: string) => num((await one(db, sql, ids))!, "n");
    await waitFor(
      "every log archived by host b or c",
      async () => (await count(`SELECT count(*) AS n FROM build_log_stats WHERE archived_seq IS NOT NULL AND build_id IN ${inIds}`)) === BUILDS,
    );
    expect(await count(`SELECT count(*) AS n FROM build_logs WHERE build_id IN ${inIds}`)).toBe(0);
    expect((await s3.keys()).filter((k) => k.startsWith("logs/")).sort()).toEqual(ids.map((id) => `logs/${id}.jsonl.gz`).sort());
    for (const id of ids) {
      for (const d of [b, c]) {
        const log: { stream: string; text: string }[] = (await http(d.url, "GET", `/v1/builds/${id}/logs`, { token: owner })).body;
        expect(log.filter((l) => l.stream !== "system").map((l) => l.text)).toEqual(Array.from({ length: ROUNDS * LINES }, (_, n) => `line ${n} of ${id}`));
      }
    }
    for (const d of [b, c]) expect((await http(d.url, "GET", "/readyz")).status).toBe(200);
    // Every background pass ran on the survivors without an error (retention's statements once failed on sqld).
    expect([b, c].flatMap((d) => d.logs.filter((l) => l.level === "error"))).toEqual([]);
  }, 150_000);
});
