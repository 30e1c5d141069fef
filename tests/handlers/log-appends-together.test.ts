// Log appends from many runners at once (docs/runners.md "Logs"; lib/logs/store.ts): they
// share one transaction of a few statements, and still each line is stored once, in its job's
// order, with a build's seqs in sequence; a retry, an overlap and a gap are answered as alone, and
// an append that fails fails alone. Run on a libSQL server too (scripts/test, ROOST_TEST_DATABASE=sqld).
import { describe, expect, test } from "bun:test";
import { type TestApp } from "../helpers/app.ts";
import { SHA_A, createPipeline, startCiFixture, fixturePerFile } from "../helpers/ci.ts";
import { appendLogLines, readLogPosition, type LogPosition } from "../../lib/logs/store.ts";
import { openDatabase, type Db, type Statement } from "../../lib/db/client.ts";

const lines30 = () => Array.from({ length: 30 }, (_, i) => `line ${i}`);

let t: TestApp, owner: string, projectId: string;
fixturePerFile(startCiFixture, (fixture) => ({ t, owner, projectId } = fixture));

/** `n` runners, each running a build of its own. */
async function runningJobs(n: number) {
  const pipeline = await createPipeline(t, owner, projectId, { concurrency: { max_concurrent: 50 } });
  for (let i = 0; i < n; i++) await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
  const jobs = [];
  for (let i = 0; i < n; i++) {
    const made = (await t.call("POST", "/v1/runners", { token: owner, body: { name: `together-${i}-${crypto.randomUUID().slice(0, 6)}` } })).body;
    const id: string = made.runner.id;
    const token: string = made.token;
    await t.call("POST", `/v1/runners/${id}/connect`, { token, body: { capabilities: { os: "linux", arch: "x64" } } });
    const job = (await t.call("POST", `/v1/runners/${id}/jobs/claim`, { token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } })).body.job;
    const append = (first_line: number, texts: string[]) =>
      t.call("POST", `/v1/runners/${id}/jobs/${job.job_id}/logs`, { token, body: { first_line, lines: texts.map((text) => ({ step: "build", text })) } });
    jobs.push({ jobId: job.job_id as string, buildId: job.build.id as string, runnerId: id, token, append });
  }
  return jobs;
}

async function storedLog(buildId: string): Promise<Array<{ seq: number; text: string }>> {
  const entries: Array<{ seq: number; stream: string; text: string }> = (await t.call("GET", `/v1/builds/${buildId}/logs`, { token: owner })).body;
  return entries.filter((e) => e.stream !== "system").map(({ seq, text }) => ({ seq, text }));
}

describe("appends from many runners at once", () => {
  test("each line is stored once in its job's order, seqs follow on, and retries, overlaps and gaps are answered as alone", async () => {
    const jobs = await runningJobs(12);
    const before = t.db.commits;
    const lines = (job: number, from: number, n: number) => Array.from({ length: n }, (_, i) => `job ${job} line ${from + i}`);
    let appends = 0;
    const answers = await Promise.all(
      jobs.map(async (job, j) => {
        const seen: string[] = [];
        for (let round = 0; round < 3; round++) {
          const sent = [job.append(round * 25, lines(j, round * 25, 25))];
          // Runner 0 retries each request at once; runner 1 overlaps the previous request by 5 lines.
          if (j === 0) sent.push(job.append(round * 25, lines(j, round * 25, 25)));
          if (j === 1 && round > 0) sent.push(job.append(round * 25 - 5, lines(j, round * 25 - 5, 30)));
          appends += sent.length;
          for (const res of await Promise.all(sent)) seen.push(`${res.status} ${res.body.next_line}`);
        }
        return seen;
      }),
    );
    expect(answers[0]).toEqual(["202 25", "202 25", "202 50", "202 50", "202 75", "202 75"]);
    expect(answers[1]).toEqual(["202 25", "202 50", "202 50", "202 75", "202 75"]);
    for (const seen of answers.slice(2)) expect(seen).toEqual(["202 25", "202 50", "202 75"]);
    // A request past the next line stores nothing and says where to resume.
    const gap = await jobs[2]!.append(80, ["too far"]);
    expect({ status: gap.status, code: gap.body.code, next: gap.headers.get("x-roost-log-next-line") }).toEqual({ status: 416, code: "log_gap", next: "75" });

    for (const [j, job] of jobs.entries()) {
      const stored = await storedLog(job.buildId);
      expect(stored.map((l) => l.text)).toEqual(lines(j, 0, 75));
      // Seqs follow on from whatever the build had before (Roost's own lines), one apart.
      expect(stored.map((l) => l.seq - stored[0]!.seq)).toEqual(Array.from({ length: 75 }, (_, i) => i));
    }
    // Shared transactions: far fewer commits than appends (runner touches included).
    expect(t.db.commits - before).toBeLessThan(appends);
  });

  test("appends read together: a revoked token, a wrong token and another runner's job are refused, the others stored", async () => {
    const jobs = await runningJobs(6);
    const revoked = jobs[1]!;
    expect((await t.call("DELETE", `/v1/runners/${revoked.runnerId}`, { token: owner })).status).toBe(200);
    const wrong = jobs[2]!;
    const thief = jobs[3]!;
    const text = (j: number) => [`job ${j} line 0`];
    // Started in one turn of the event loop: on libSQL their tokens and jobs are read together (lib/db/grouped-read.ts).
    const answers = await Promise.all(
      jobs.map((job, j) => {
        if (job === wrong)
          return t.call("POST", `/v1/runners/${job.runnerId}/jobs/${job.jobId}/logs`, {
            token: `${job.token.slice(0, -4)}AAAA`,
            body: { first_line: 0, lines: [{ step: "build", text: "never" }] },
          });
        // Runner 3 appends to runner 4's job.
        if (job === thief)
          return t.call("POST", `/v1/runners/${job.runnerId}/jobs/${jobs[4]!.jobId}/logs`, {
            token: job.token,
            body: { first_line: 0, lines: [{ step: "build", text: "never" }] },
          });
        return job.append(0, text(j));
      }),
    );
    expect(answers.map((a) => `${a.status} ${a.body.code ?? a.body.next_line}`)).toEqual([
      "202 1",
      "401 invalid_token",
      "401 invalid_token",
      "409 job_not_assigned",
      "202 1",
      "202 1",
    ]);
    for (const [j, job] of jobs.entries()) expect((await storedLog(job.buildId)).map((l) => l.text)).toEqual([0, 4, 5].includes(j) ? text(j) : []);
  });

  test("two daemons appending the same lines of a job at once store each line once, and both answer as alone", async () => {
    const [job] = await runningJobs(1);
    // A second connection to the same database, as a second daemon (a retried request that a load balancer sent elsewhere).
    const other = await openDatabase(t.config.databaseUrl);
    try {
      const lines = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ step: "build", stream: "stdout" as const, text: `line ${from + i}` }));
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all(
          [t.db, other, t.db, other].map((db) => appendLogLines(db, job!.jobId, job!.buildId, round * 10, lines(round * 10, 10), t.clock.now(), 1 << 20)),
        );
        expect(answers.map((a) => a.kind === "ok" && a.next_line)).toEqual([10, 10, 10, 10].map((n) => n * (round + 1)));
        expect(answers.reduce((n, a) => n + (a.kind === "ok" ? a.accepted : 0), 0)).toBe(10);
      }
    } finally {
      other.close();
    }
    const stored = await storedLog(job!.buildId);
    expect(stored.map((l) => l.text)).toEqual(lines30());
    expect(stored.map((l) => l.seq - stored[0]!.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i));
  });

  test("an append that fails fails alone; the ones written with it are stored", async () => {
    const jobs = await runningJobs(3);
    // Started in one turn of the event loop, so all four share the first transaction.
    const append = (jobId: string, buildId: string, text: string) =>
      appendLogLines(t.db, jobId, buildId, 0, [{ step: "build", stream: "stdout", text }], t.clock.now(), 1 << 20);
    const [good0, bad, ...good] = await Promise.allSettled([
      append(jobs[0]!.jobId, jobs[0]!.buildId, "only line of job 0"),
      append("no-such-job", jobs[0]!.buildId, "lost"),
      ...jobs.slice(1).map((job, j) => append(job.jobId, job.buildId, `only line of job ${j + 1}`)),
    ]);
    expect(bad).toMatchObject({ status: "rejected", reason: expect.objectContaining({ message: expect.stringContaining("no-such-job") }) });
    expect([good0, ...good].map((g) => (g.status === "fulfilled" ? g.value : g.reason))).toEqual(
      [1, 2, 3].map(() => expect.objectContaining({ kind: "ok", next_line: 1, accepted: 1 })),
    );
    for (const [j, job] of jobs.entries()) expect((await storedLog(job.buildId)).map((l) => l.text)).toEqual([`only line of job ${j}`]);
  });

  test("an append given positions read before other writes (a stale hint) stores each line once, and answers a gap or a repeat only from the database", async () => {
    const [job] = await runningJobs(1);
    const { jobId, buildId } = job!;
    const lines = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ step: "build", stream: "stdout" as const, text: `line ${from + i}` }));
    const append = (first: number, n: number, known: LogPosition) =>
      appendLogLines(t.db, jobId, buildId, first, lines(first, n), t.clock.now(), 1 << 20, "jobs", known);
    const start = (await readLogPosition(t.db, "jobs", jobId))!;
    expect(start.next_line).toBe(0);
    expect(await append(0, 10, start)).toMatchObject({ kind: "ok", next_line: 10, accepted: 10 });
    // Each of these is told the job and build still stand where they did before the first append.
    expect(await append(10, 10, start)).toMatchObject({ kind: "ok", next_line: 20, accepted: 10 });
    expect(await append(0, 10, start)).toMatchObject({ kind: "ok", next_line: 20, accepted: 0 });
    expect(await append(15, 10, start)).toMatchObject({ kind: "ok", next_line: 25, accepted: 5 });
    expect(await append(30, 5, start)).toEqual({ kind: "gap", next_line: 25 });
    // Told the job is further on than it is: a gap the hint hides is still found.
    expect(await append(26, 5, { ...start, next_line: 40 })).toEqual({ kind: "gap", next_line: 25 });
    // Told a gap that is not there: the lines are stored.
    expect(await append(25, 5, start)).toMatchObject({ kind: "ok", next_line: 30, accepted: 5 });
    const stored = await storedLog(buildId);
    expect(stored.map((l) => l.text)).toEqual(lines30());
    expect(stored.map((l) => l.seq - stored[0]!.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(await readLogPosition(t.db, "jobs", jobId)).toMatchObject({ next_line: 30, stats: { last_seq: stored.at(-1)!.seq } });
  });

  /** The database, with every write batch's statements (their SQL) recorded as sent. */
  function recordingBatches(): { db: Db; sent: string[][] } {
    const sent: string[][] = [];
    const db = new Proxy(t.db, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (key === "batch")
          return (stmts: Statement[], ...rest: any[]) => (sent.push(stmts.map((s) => (typeof s === "string" ? s : s.sql))), target.batch(stmts, ...rest));
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    return { db, sent };
  }
  const jobLines = (job: number, from: number, n: number) =>
    Array.from({ length: n }, (_, i) => ({ step: "build", stream: "stdout" as const, text: `job ${job} line ${from + i}` }));

  // On a libSQL server every statement is prepared afresh (docs/benchmarks.md "Log appends on sqld:
  // merged statements"): the appends of one write batch go as three statements between them there.
  test("appends of several jobs waiting together go as three statements on libSQL; one whose job another daemon appended to in between goes again, and each job ends with exactly its lines", async () => {
    const jobs = await runningJobs(4);
    const known = await Promise.all(jobs.map((job) => readLogPosition(t.db, "jobs", job.jobId)));
    const other = await openDatabase(t.config.databaseUrl);
    try {
      // Another daemon stores the first 10 lines of job 2 after this one read where it stood.
      expect(await appendLogLines(other, jobs[2]!.jobId, jobs[2]!.buildId, 0, jobLines(2, 0, 10), t.clock.now(), 1 << 20)).toMatchObject({ accepted: 10 });
    } finally {
      other.close();
    }
    const { db, sent } = recordingBatches();
    // Started in one turn of the event loop: they wait together.
    const answers = await Promise.all(
      jobs.map((job, j) => appendLogLines(db, job.jobId, job.buildId, 0, jobLines(j, 0, 20), t.clock.now(), 1 << 20, "jobs", known[j]!)),
    );
    expect(answers.map((a) => a.kind === "ok" && [a.next_line, a.accepted])).toEqual([
      [20, 20],
      [20, 20],
      [20, 10],
      [20, 20],
    ]);
    for (const [j, job] of jobs.entries()) {
      const stored = await storedLog(job.buildId);
      expect(stored.map((l) => l.text)).toEqual(jobLines(j, 0, 20).map((l) => l.text));
      expect(stored.map((l) => l.seq - stored[0]!.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(await readLogPosition(t.db, "jobs", job.jobId)).toEqual({ next_line: 20, stats: expect.objectContaining({ last_seq: stored.at(-1)!.seq }) });
    }
    // libSQL: the merged statements, which wrote nothing (job 2 had moved); each append's own
    // statements, of which job 2's wrote nothing; job 2 again, alone, from where it now stands.
    // bun:sqlite: each append's own statements, then job 2's again.
    expect(sent.map((b) => b.length)).toEqual(t.db.driver === "libsql" ? [3, 12, 3] : [12, 3]);
  });

  test("on libSQL, appends of one job twice and of other jobs waiting together go as three statements, and each line is stored once in order", async () => {
    const jobs = await runningJobs(3);
    const { db, sent } = recordingBatches();
    const answers = await Promise.all([
      appendLogLines(db, jobs[0]!.jobId, jobs[0]!.buildId, 0, jobLines(0, 0, 10), t.clock.now(), 1 << 20),
      appendLogLines(db, jobs[1]!.jobId, jobs[1]!.buildId, 0, jobLines(1, 0, 10), t.clock.now(), 1 << 20),
      appendLogLines(db, jobs[0]!.jobId, jobs[0]!.buildId, 5, jobLines(0, 5, 10), t.clock.now(), 1 << 20),
      appendLogLines(db, jobs[2]!.jobId, jobs[2]!.buildId, 0, jobLines(2, 0, 3), t.clock.now(), 1 << 20),
    ]);
    expect(answers.map((a) => a.kind === "ok" && [a.next_line, a.accepted])).toEqual([
      [10, 10],
      [10, 10],
      [15, 5],
      [3, 3],
    ]);
    for (const [j, job] of jobs.entries()) {
      const stored = await storedLog(job.buildId);
      expect(stored.map((l) => l.text)).toEqual(jobLines(j, 0, [15, 10, 3][j]!).map((l) => l.text));
      expect(stored.map((l) => l.seq - stored[0]!.seq)).toEqual(stored.map((_, i) => i));
      expect(await readLogPosition(t.db, "jobs", job.jobId)).toEqual({
        next_line: [15, 10, 3][j]!,
        stats: expect.objectContaining({ last_seq: stored.at(-1)!.seq }),
      });
    }
    expect(sent.map((b) => b.length)).toEqual(t.db.driver === "libsql" ? [3] : [12]);
  });

  test("any text a runner sends comes back as sent: quotes, backslashes, control characters, NUL, non-ASCII", async () => {
    const [job] = await runningJobs(1);
    const texts = ['say "hi"', "back\\slash \\n", "tab\tcr\rbell\u0007", "é ✓ 日本 😀", "\u2028\u2029", "", "[1, 2]", '{"json": true}'];
    // libSQL's native addon on a local file (ROOST_DB_DRIVER=libsql, a test mode) cuts a text at NUL, as it did before lines went as JSON.
    if (!(t.db.driver === "libsql" && t.config.databaseUrl.startsWith("file:"))) texts.push("nul \u0000 inside");
    const res = await job!.append(0, texts);
    expect(res.body).toMatchObject({ next_line: texts.length, accepted: texts.length });
    expect((await storedLog(job!.buildId)).map((l) => l.text)).toEqual(texts);
  });
});

describe("long lines", () => {
  // A libSQL server answers at most 10 MB at once (sqld's --max-response-size, RESPONSE_TOO_LARGE);
  // a page of 1,000 lines of 64 KiB, the longest a runner may send, is 64 MB.
  test("a log of lines of 64 KiB, more than a libSQL server answers in one response, reads back whole, as JSON and as text", async () => {
    const [job] = await runningJobs(1);
    const line = (i: number) => `${String(i).padStart(4, "0")} ${"x".repeat(65_536 - 5)}`;
    const total = 240;
    // 15 lines an append: under the 1 MiB a log request may carry.
    for (let at = 0; at < total; at += 15) {
      const res = await job!.append(
        at,
        Array.from({ length: 15 }, (_, i) => line(at + i)),
      );
      expect(res.status).toBe(202);
    }
    const stored = await storedLog(job!.buildId);
    expect(stored.length).toBe(total);
    expect(stored.every((l, i) => l.text === line(i))).toBe(true);
    const text = (await t.call("GET", `/v1/builds/${job!.buildId}/logs`, { token: owner, headers: { accept: "text/plain" } })).text;
    expect(text.split("\n").filter((l) => !l.startsWith("[roost]") && l !== "").length).toBe(total);
  });
});
