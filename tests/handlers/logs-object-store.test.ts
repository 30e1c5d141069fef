// Finished build logs in an S3-compatible object store (docs/operations.md "Object storage"),
// against a real S3 server that checks signatures (tests/support/s3-server.ts): a build's lines
// stay rows while it runs; once it has finished they move, gzip-compressed, to the bucket and the
// rows go; GET /v1/builds/{id}/logs and the live stream answer the same as before from another
// daemon on the same database; lines appended later follow; retention deletes the object.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { gunzipSync } from "node:zlib";
import { localLogin, type TestApp } from "../helpers/app.ts";
import { SHA_A, createPipeline, daemonOnSameDatabase, startCiFixture, startS3CiFixture, type S3CiFixture } from "../helpers/ci.ts";
import { SseReader } from "../helpers/sse.ts";
import type { S3Server } from "../support/s3-server.ts";
import { createBuild } from "../../lib/builds/create.ts";
import { transitionBuild } from "../../lib/builds/transition.ts";
import { appendSystemLine, systemLineStatements } from "../../lib/logs/store.ts";
import { num, one } from "../../lib/db/client.ts";
import { ARCHIVE_AFTER_SECONDS, ARCHIVE_LEASE_SECONDS, archiveFinishedLogs } from "../../lib/logs/archive.ts";
import { enforceRetention, GRACE_SECONDS } from "../../lib/retention/retention.ts";

let fixture: S3CiFixture;
let s3: S3Server;
/** The daemon the build ran on. */
let a: TestApp;
/** Another daemon on the same database and bucket, with a data directory of its own. */
let b: TestApp;
let owner: string;
let pipelineId: string;

beforeAll(async () => {
  ({ t: a, owner, s3 } = fixture = await startS3CiFixture({ ROOST_LOG_RETENTION_DAYS: "2" }));
  b = await daemonOnSameDatabase(fixture, s3.env());
  pipelineId = (await createPipeline(a, owner, fixture.projectId)).id;
});
afterAll(async () => {
  b.close();
  await fixture.stop();
});

/** A build that wrote `lines` lines and ended with `end` (still running when null). */
async function buildWithLog(lines: number, end: "fail" | "succeed" | null = "fail"): Promise<string> {
  const { build } = await createBuild(a.ctx, { pipelineId, branch: "feature", commitSha: SHA_A, triggerType: "manual", concurrencyKey: null });
  await transitionBuild(a.ctx, build.id, "start");
  // One write batch: on a remote database one request, where a statement at a time would be thousands.
  await a.db.batch(
    Array.from({ length: lines }, (_, i) => systemLineStatements(build.id, `line ${i + 1} ✓ ${"x".repeat((i + 1) % 50)}`, a.clock.now())).flat(),
  );
  if (end) await transitionBuild(a.ctx, build.id, end);
  return build.id;
}

const rows = async (buildId: string) => num((await one(a.db, "SELECT COUNT(*) AS n FROM build_logs WHERE build_id = ?", [buildId]))!, "n");
const readLog = (t: TestApp, buildId: string, query = "", text = false) =>
  t.call("GET", `/v1/builds/${buildId}/logs${query}`, { token: owner, headers: text ? { accept: "text/plain" } : {} });

describe("finished build logs in an S3-compatible store", () => {
  test("a finished build's log moves to the bucket compressed and is read the same, JSON, text and pages, through another daemon", async () => {
    const buildId = await buildWithLog(2500);
    const json = (await readLog(a, buildId)).text;
    const text = (await readLog(a, buildId, "", true)).text;
    const page = (await readLog(a, buildId, "?after_seq=998&limit=5")).text;
    expect(JSON.parse(json)).toHaveLength(2500);

    // Not before ARCHIVE_AFTER_SECONDS: streams following the build to its end read the rows.
    expect(await archiveFinishedLogs(a.ctx, "daemon-a")).toEqual({ archived: 0 });
    a.clock.advance(ARCHIVE_AFTER_SECONDS);
    expect((await archiveFinishedLogs(a.ctx, "daemon-a")).archived).toBeGreaterThanOrEqual(1);
    expect(await rows(buildId)).toBe(0);
    expect(await s3.keys()).toContain(`logs/${buildId}.jsonl.gz`);
    const object = await s3.client.file(`logs/${buildId}.jsonl.gz`).bytes();
    const stored = gunzipSync(object).toString().trimEnd().split("\n");
    expect(stored).toHaveLength(2500);
    expect(object.byteLength).toBeLessThan(Buffer.byteLength(json) / 4);

    expect((await readLog(b, buildId)).text).toBe(json);
    expect((await readLog(b, buildId, "", true)).text).toBe(text);
    expect((await readLog(b, buildId, "?after_seq=998&limit=5")).text).toBe(page);
    expect(JSON.parse(page).map((e: { seq: number }) => e.seq)).toEqual([999, 1000, 1001, 1002, 1003]);
  });

  test("the live log endpoint streams an archived log to its end, from another daemon", async () => {
    const buildId = await buildWithLog(30);
    a.clock.advance(ARCHIVE_AFTER_SECONDS);
    await archiveFinishedLogs(a.ctx, "daemon-a");
    expect(await rows(buildId)).toBe(0);
    const { token } = (await b.call("POST", `/v1/builds/${buildId}/stream-token`, { token: owner })).body;
    const sse = new SseReader(await b.app.fetch(new Request(`http://127.0.0.1:8080/v1/builds/${buildId}/logs/stream?token=${token}`), "127.0.0.1"));
    const events = await sse.until((e) => e.some((x) => x.event === "end"));
    const logs = events.filter((e) => e.event === "log");
    expect(logs.map((e) => e.id)).toEqual(Array.from({ length: 30 }, (_, i) => String(i + 1)));
    expect(JSON.parse(logs[29]!.data).text).toBe(`line 30 ✓ ${"x".repeat(30)}`);
    expect(JSON.parse(events.find((e) => e.event === "end")!.data)).toMatchObject({ status: "failed", last_seq: 30 });
  });

  test("a running build's lines stay in the database; lines added after the move follow the archived ones", async () => {
    const running = await buildWithLog(10, null);
    const finished = await buildWithLog(10);
    a.clock.advance(ARCHIVE_AFTER_SECONDS);
    await archiveFinishedLogs(a.ctx, "daemon-a");
    expect(await rows(running)).toBe(10);
    expect(await rows(finished)).toBe(0);
    await appendSystemLine(a.db, finished, "[roost] a later line", a.clock.now());
    const log = (await readLog(b, finished)).body as { seq: number; text: string }[];
    expect(log.map((e) => e.seq)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    expect(log.at(-1)!.text).toBe("[roost] a later line");
    expect((await readLog(b, finished, "?after_seq=9", true)).text).toBe(`line 10 ✓ ${"x".repeat(10)}\n[roost] a later line\n`);
  });

  test("one daemon at a time archives a log: a line appended during the first one's upload is not lost to a second's pass", async () => {
    const buildId = await buildWithLog(20);
    a.clock.advance(ARCHIVE_AFTER_SECONDS);
    b.clock.advance(a.clock.now() - b.clock.now());
    // a's upload of the 20 lines it read is slow; a deployment appends a line meanwhile.
    const uploading = Promise.withResolvers<void>();
    const gate = Promise.withResolvers<void>();
    const slow: typeof a.ctx.objects = Object.create(a.ctx.objects);
    slow.put = async (...args) => {
      uploading.resolve();
      await gate.promise;
      return a.ctx.objects.put(...args);
    };
    const aPass = archiveFinishedLogs({ ...a.ctx, objects: slow }, "daemon-a");
    await uploading.promise;
    await appendSystemLine(a.db, buildId, "[roost] appended during the upload", a.clock.now());
    // b leaves the log to a (before, b archived all 21 lines, then a's upload replaced them with 20).
    expect(await archiveFinishedLogs(b.ctx, "daemon-b")).toEqual({ archived: 0 });
    gate.resolve();
    // a's lines are no longer all of them: it marks nothing, and its next pass moves the 21.
    expect(await aPass).toEqual({ archived: 0 });
    // ...and lets the log go at once rather than at its lease's end (a restarted daemon has a new name).
    expect(
      (await a.db.execute({ sql: "SELECT archive_taken_by FROM build_log_stats WHERE build_id = ?", args: [buildId] })).rows[0]!.archive_taken_by,
    ).toBeNull();
    expect((await archiveFinishedLogs(a.ctx, "daemon-a")).archived).toBeGreaterThanOrEqual(1);
    expect(await rows(buildId)).toBe(0);
    const log = (await readLog(b, buildId)).body as { seq: number; text: string }[];
    expect(log.map((e) => e.seq)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    expect(log.at(-1)!.text).toBe("[roost] appended during the upload");
  });

  test("a daemon whose lease ran out (killed mid-pass) leaves the log to the next, which finds it whole", async () => {
    const buildId = await buildWithLog(2500);
    const json = (await readLog(a, buildId)).text;
    a.clock.advance(ARCHIVE_AFTER_SECONDS);
    await a.db.execute({
      sql: "UPDATE build_log_stats SET archive_taken_by = 'killed', archive_taken_until = ? WHERE build_id = ?",
      args: [a.clock.now() + ARCHIVE_LEASE_SECONDS, buildId],
    });
    await archiveFinishedLogs(a.ctx, "daemon-a");
    expect(await rows(buildId)).toBe(2500);
    a.clock.advance(ARCHIVE_LEASE_SECONDS + 1);
    b.clock.advance(a.clock.now() - b.clock.now());
    // b's pass then reads the rows late: a's whole pass happens in between (the lease b took ran
    // out meanwhile too), as when a daemon stalls for an hour; b finds its rows gone and writes nothing.
    const bReads = Promise.withResolvers<void>();
    const aDone = Promise.withResolvers<void>();
    const late: typeof b.db = Object.create(b.db);
    late.execute = async (stmt, args) => {
      if (/FROM build_logs\b/.test(typeof stmt === "string" ? stmt : stmt.sql)) {
        bReads.resolve();
        await aDone.promise;
      }
      return b.db.execute(stmt, args);
    };
    const bPass = archiveFinishedLogs({ ...b.ctx, db: late }, "daemon-b");
    await bReads.promise;
    a.clock.advance(ARCHIVE_LEASE_SECONDS + 1);
    expect((await archiveFinishedLogs(a.ctx, "daemon-a")).archived).toBeGreaterThanOrEqual(1);
    aDone.resolve();
    expect(await bPass).toEqual({ archived: 0 });
    expect(await rows(buildId)).toBe(0);
    expect((await readLog(b, buildId)).text).toBe(json);
  });

  test("a log retention deleted before it was archived is no longer among the logs waiting to be archived", async () => {
    const buildId = await buildWithLog(5);
    // The archive index (build_log_stats_unarchived, migration 35) is what every archive pass reads.
    const waiting = async () =>
      (await a.db.execute("SELECT build_id FROM build_log_stats INDEXED BY build_log_stats_unarchived WHERE archived_seq IS NULL AND last_seq > 0")).rows.map(
        (r) => r.build_id,
      );
    expect(await waiting()).toContain(buildId);
    a.clock.advance(3 * 86_400 + GRACE_SECONDS);
    await enforceRetention(a.ctx);
    expect(await waiting()).not.toContain(buildId);
    await archiveFinishedLogs(a.ctx, "daemon-a");
    expect(await s3.keys()).not.toContain(`logs/${buildId}.jsonl.gz`);
    const token = await localLogin(a, "owner@example.test");
    expect((await a.call("GET", `/v1/builds/${buildId}/logs`, { token })).body).toEqual([]);
  });

  test("retention deletes an archived log's object", async () => {
    const buildId = await buildWithLog(5);
    a.clock.advance(ARCHIVE_AFTER_SECONDS);
    await archiveFinishedLogs(a.ctx, "daemon-a");
    expect(await s3.keys()).toContain(`logs/${buildId}.jsonl.gz`);
    a.clock.advance(3 * 86_400 + GRACE_SECONDS);
    await enforceRetention(a.ctx);
    expect(await s3.keys()).not.toContain(`logs/${buildId}.jsonl.gz`);
    const token = await localLogin(a, "owner@example.test");
    expect((await a.call("GET", `/v1/builds/${buildId}/logs`, { token })).body).toEqual([]);
  });
});

describe("on the default store", () => {
  test("logs stay in the database", async () => {
    const local = await startCiFixture();
    try {
      const { build } = await createBuild(local.t.ctx, {
        pipelineId: (await createPipeline(local.t, local.owner, local.projectId)).id,
        branch: "main",
        commitSha: SHA_A,
        triggerType: "manual",
        concurrencyKey: null,
      });
      await transitionBuild(local.t.ctx, build.id, "start");
      await appendSystemLine(local.t.db, build.id, "kept here", local.t.clock.now());
      await transitionBuild(local.t.ctx, build.id, "fail");
      local.t.clock.advance(ARCHIVE_AFTER_SECONDS);
      expect(await archiveFinishedLogs(local.t.ctx, "daemon-a")).toEqual({ archived: 0 });
      expect(num((await one(local.t.db, "SELECT COUNT(*) AS n FROM build_logs WHERE build_id = ?", [build.id]))!, "n")).toBe(1);
    } finally {
      await local.stop();
    }
  });
});
