// Two `roost serve` processes on one libSQL server (sqld, tests/support/sqld.ts), as several
// hosts run Roost (docs/operations.md "Several hosts"): both migrate an empty server at once, and
// runners claiming, appending, heartbeating and finishing through both get no 500 while the
// server answers SQLITE_BUSY, every build is run once, and every line is stored once; GitHub gets
// each commit status change once from their two reporters; sqld stopped, they answer 503.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { createGithubProject } from "../helpers/ci-daemon.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { startSqld, type Sqld } from "../support/sqld.ts";

let sqld: Sqld;
let host: HostApiStandIn;
let a: Daemon;
let b: Daemon;
let owner = "";

beforeAll(async () => {
  sqld = await startSqld();
  host = await startHostApiStandIn();
  host.github.repos.push({ id: 4242, full_name: "acme/app", default_branch: "main", private: true });
  // Every host shares the database and the secret key that seals the credentials in it.
  const env = { ROOST_SECRET_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64"), ROOST_LOG_LEVEL: "info" };
  // Started together on an empty server, as a service manager would start two hosts; one talks
  // Hrana over HTTP, the other over WebSocket (a libsql:// URL).
  const port = new URL(sqld.url).port;
  [a, b] = await Promise.all([
    startDaemon({ env: { ...env, ROOST_DATABASE_URL: sqld.url } }),
    startDaemon({ env: { ...env, ROOST_DATABASE_URL: `libsql://127.0.0.1:${port}?tls=0` } }),
  ]);
  owner = (await http(a.url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } })).body.session_token;
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await host?.stop();
  await sqld?.stop();
  if (sqld) rmSync(join(sqld.dir, ".."), { recursive: true, force: true });
});

/**
 * Another process takes the write lock of sqld's own file for `ms`, writing nothing: meanwhile sqld
 * answers every write transaction SQLITE_BUSY, as it does when it cannot take the lock itself.
 */
async function holdServerWriteLock(ms: number): Promise<Promise<number>> {
  const holder = Bun.spawn(
    [
      process.execPath,
      "-e",
      `const { Database } = require("bun:sqlite");
       const db = new Database(${JSON.stringify(sqld.dataFile)});
       db.exec("PRAGMA busy_timeout = 10000");
       db.exec("BEGIN IMMEDIATE");
       console.log("locked");
       setTimeout(() => { db.exec("ROLLBACK"); db.close(); }, ${ms});`,
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  const { value } = await (holder.stdout as ReadableStream<Uint8Array>).getReader().read();
  expect(new TextDecoder().decode(value)).toContain("locked");
  return holder.exited;
}

describe("two daemons on one sqld", () => {
  test("both migrated the empty server at once and serve the same instance", async () => {
    expect((await http(a.url, "GET", "/readyz")).status).toBe(200);
    expect((await http(b.url, "GET", "/readyz")).status).toBe(200);
    expect((await http(b.url, "GET", "/v1/users/me", { token: owner })).body.user.email).toBe("owner@example.test");
  });

  test("roost backup says to back the server up on its host", async () => {
    const backup = await a.cli(["backup", "/tmp/roost-backup-never-written.db"]);
    expect({ code: backup.code, stderr: backup.stderr }).toEqual({
      code: 2,
      stderr: 'roost backup: the database is a libSQL server (ROOST_DATABASE_URL); back it up on its host, see docs/operations.md "Several hosts"\n',
    });
  });

  test("runners racing through both while the server is busy: no 500, every build runs once, every line is stored once", async () => {
    const project = await createGithubProject([a.url, b.url, a.url], owner, host, "sqld-daemons-secret");
    const pipeline = (
      await http(b.url, "POST", `/v1/projects/${project.id}/pipelines`, {
        token: owner,
        body: { name: "all", trigger_config: { branches: ["**"] }, concurrency: { max_concurrent: 50 } },
      })
    ).body.pipeline;
    const BUILDS = 24;
    const created = await Promise.all(
      Array.from({ length: BUILDS }, (_, i) =>
        http(i % 2 ? a.url : b.url, "POST", `/v1/projects/${project.id}/builds`, {
          token: owner,
          body: { pipeline_id: pipeline.id, commit_sha: "a".repeat(40) },
        }),
      ),
    );
    expect(created.map((r) => `${r.status} ${r.status === 201 ? "" : JSON.stringify(r.body)}`)).toEqual(Array(BUILDS).fill("201 "));

    const runners = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const made = (await http(a.url, "POST", "/v1/runners", { token: owner, body: { name: `linux-${i}` } })).body;
        await http(b.url, "POST", `/v1/runners/${made.runner.id}/connect`, { token: made.token, body: { capabilities: { os: "linux", arch: "x64" } } });
        return { id: made.runner.id as string, token: made.token as string };
      }),
    );

    const answers: string[] = [];
    const ran: string[] = [];
    const LINES = 25;
    const work = async (runner: { id: string; token: string }, n: number) => {
      for (let round = 0; ; round++) {
        const [one, other] = (n + round) % 2 ? [a.url, b.url] : [b.url, a.url];
        const call = async (url: string, path: string, body: unknown) => {
          const res = await http(url, "POST", `/v1/runners/${runner.id}${path}`, { token: runner.token, body });
          answers.push(`${path.split("/").pop()} ${res.status}${res.status >= 500 ? ` ${JSON.stringify(res.body)}` : ""}`);
          return res;
        };
        const claim = await call(one, "/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 });
        if (claim.status !== 201) return;
        const job = claim.body.job;
        ran.push(job.build.id);
        const lines = Array.from({ length: LINES }, (_, i) => ({ step: "build", text: `line ${i} of ${job.build.id}` }));
        await call(other, `/jobs/${job.job_id}/logs`, { first_line: 0, lines });
        await call(one, "/heartbeat", { job_ids: [job.job_id] });
        await call(other, `/jobs/${job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: LINES });
      }
    };
    // The server is busy twice while the runners work: once from the start, once in the middle.
    const busy = holdServerWriteLock(400).then(async (released) => {
      await released;
      await Bun.sleep(150);
      await await holdServerWriteLock(400);
    });
    await Promise.all([...runners.map(work), busy]);

    const failed = answers.filter((x) => !/ 20[0124]$/.test(x));
    expect(failed).toEqual([]);
    expect(ran.length).toBe(BUILDS);
    expect(new Set(ran).size).toBe(BUILDS);
    const listed = (await http(b.url, "GET", `/v1/projects/${project.id}/builds?limit=100`, { token: owner })).body.builds;
    expect(listed.map((x: { status: string }) => x.status)).toEqual(Array(BUILDS).fill("succeeded"));
    for (const id of ran.slice(0, 3)) {
      const log: { stream: string; text: string }[] = (await http(a.url, "GET", `/v1/builds/${id}/logs`, { token: owner })).body;
      expect(log.filter((l) => l.stream !== "system").map((l) => l.text)).toEqual(Array.from({ length: LINES }, (_, i) => `line ${i} of ${id}`));
    }
  }, 60_000);

  test("commit statuses: with both daemons' reporters claiming from one outbox, GitHub gets each change of each commit once", async () => {
    const project = (await http(a.url, "GET", "/v1/projects", { token: owner })).body.projects[0];
    const pipeline = (
      await http(a.url, "POST", `/v1/projects/${project.id}/pipelines`, { token: owner, body: { name: "statuses", concurrency: { max_concurrent: 50 } } })
    ).body.pipeline;
    // A slow host, so that one reporter's sends are still in flight while the other claims.
    host.statuses.delayMs = 30;
    const COMMITS = 30;
    const shas = Array.from({ length: COMMITS }, (_, i) => i.toString(16).padStart(40, "e"));
    const builds = await Promise.all(
      shas.map(async (sha, i) => {
        const res = await http(i % 2 ? a.url : b.url, "POST", `/v1/projects/${project.id}/builds`, {
          token: owner,
          body: { pipeline_id: pipeline.id, commit_sha: sha },
        });
        expect(res.status).toBe(201);
        return res.body.build as { id: string; build_number: number };
      }),
    );
    const made = (await http(a.url, "POST", "/v1/runners", { token: owner, body: { name: "statuses" } })).body;
    const runner = (url: string, path: string, body: unknown) => http(url, "POST", `/v1/runners/${made.runner.id}${path}`, { token: made.token, body });
    await runner(b.url, "/connect", { capabilities: { os: "linux", arch: "x64" } });
    // Each build is started through one daemon and finished through the other, so both report.
    for (let i = 0; i < COMMITS; i++) {
      const [one, other] = i % 2 ? [a.url, b.url] : [b.url, a.url];
      const claim = await runner(one, "/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0 });
      expect(claim.status).toBe(201);
      const finished = await runner(other, `/jobs/${claim.body.job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0 });
      expect(finished.status).toBe(200);
    }
    const posts = () =>
      host.requests
        .filter((r) => r.method === "POST" && shas.some((sha) => r.path === `/repos/acme/app/statuses/${sha}`))
        .map((r) => `${r.path.split("/").pop()} ${(r.body as { state: string }).state} ${(r.body as { description: string }).description}`);
    const finishedEverywhere = () => shas.every((sha) => posts().some((p) => p.startsWith(sha) && p.includes(" success ")));
    for (const deadline = Date.now() + 20_000; !finishedEverywhere() && Date.now() < deadline; ) await Bun.sleep(100);
    // Two more passes of each reporter (every 2 s), in which a status sent twice would show.
    await Bun.sleep(4500);
    const sent = posts();
    expect(sent.filter((p, i) => sent.indexOf(p) !== i)).toEqual([]);
    const byNumber = new Map(builds.map((x, i) => [shas[i]!, x.build_number]));
    // Each commit's final state exactly once (its queued and running states are sent only if a
    // reporter came by before the build moved on: only the latest state of a commit is ever sent).
    expect(shas.map((sha) => sent.filter((p) => p.startsWith(`${sha} success`)))).toEqual(
      shas.map((sha) => [`${sha} success Build #${byNumber.get(sha)} succeeded`]),
    );
    host.statuses.delayMs = 0;
  }, 60_000);

  // Last: it stops the server. Requests that need the database answer 503 database_unavailable
  // while it is away (/readyz 503 not_ready, so a load balancer stops sending traffic) and work
  // again once it is back, through both transports, without restarting a daemon.
  test("sqld killed and started again: the daemons answer 503 database_unavailable meanwhile, then serve again by themselves", async () => {
    const port = Number(new URL(sqld.url).port);
    const runner = (await http(a.url, "POST", "/v1/runners", { token: owner, body: { name: "while-down" } })).body;
    const logged = [a.logs.length, b.logs.length];
    await sqld.stop({ signal: "SIGKILL", keep: true });
    const unavailable = {
      status: 503,
      retryAfter: "5",
      body: { code: "database_unavailable", message: "The database does not answer; try again in a moment." },
    };
    const answer = (r: { status: number; headers: Headers; body: unknown }) => ({ status: r.status, retryAfter: r.headers.get("retry-after"), body: r.body });
    for (const d of [a, b]) {
      expect((await http(d.url, "GET", "/readyz")).body).toEqual({ code: "not_ready", message: "The database does not answer." });
      // A read, a write, a runner's call and a webhook: each answers the same 503, twice in a row.
      for (let i = 0; i < 2; i++) {
        expect(answer(await http(d.url, "GET", "/v1/users/me", { token: owner }))).toEqual(unavailable);
        expect(answer(await http(d.url, "POST", "/v1/api-tokens", { token: owner, body: { name: "while-down", role: "developer" } }))).toEqual(unavailable);
        expect(
          answer(
            await http(d.url, "POST", `/v1/runners/${runner.runner.id}/jobs/claim`, {
              token: runner.token,
              body: { claim_id: crypto.randomUUID(), wait_seconds: 0 },
            }),
          ),
        ).toEqual(unavailable);
        const webhook = await http(d.url, "POST", "/v1/webhooks/github", {
          headers: { "x-github-event": "ping", "x-github-delivery": crypto.randomUUID(), "x-hub-signature-256": "sha256=00" },
          body: { zen: "down" },
        });
        expect(answer(webhook)).toEqual(unavailable);
      }
    }
    // No stack trace: the daemons log the failure as a warning, never as an unhandled error.
    const newLogs = [...a.logs.slice(logged[0]), ...b.logs.slice(logged[1])];
    expect(newLogs.filter((l) => /unhandled/.test(String(l.msg)))).toEqual([]);
    expect(newLogs.some((l) => l.msg === "database unreachable")).toBe(true);

    sqld = await startSqld({ dir: sqld.dir, port });
    for (const d of [a, b]) {
      expect((await http(d.url, "GET", "/readyz")).status).toBe(200);
      expect((await http(d.url, "POST", "/v1/api-tokens", { token: owner, body: { name: `after-${d.url}`, role: "developer" } })).status).toBe(201);
    }
  }, 30_000);
});
