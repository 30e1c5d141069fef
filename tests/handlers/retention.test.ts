// Retention of build logs and artifacts (docs/operations.md "Retention"): instance defaults and
// per-project overrides, by age and by count per pipeline, the latest successful build of each
// branch kept, bounded batches, files and database pages given back, /metrics, and the operator
// incident that warns before the disk fills while retention is off. A real database file and real
// artifact files; the test clock moves time.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { bootstrapOwner, createTestApp, localLogin, userWithRole, type TestApp } from "../helpers/app.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, createGithubIntegration, createPipeline, createProject, seedStandIn } from "../helpers/ci.ts";
import { createBuild } from "../../lib/builds/create.ts";
import { transitionBuild } from "../../lib/builds/transition.ts";
import { appendSystemLine } from "../../lib/logs/store.ts";
import { artifactFile, storeArtifact } from "../../lib/artifacts/artifacts.ts";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { checkDataDirGrowth, enforceRetention, GRACE_SECONDS } from "../../lib/retention/retention.ts";
import { one, num } from "../../lib/db/client.ts";
import { rerunningFirstTransaction } from "../helpers/fault-injection.ts";

const DAY = 86_400;
let host: HostApiStandIn;
beforeAll(async () => {
  host = await startHostApiStandIn();
  seedStandIn(host);
});
afterAll(async () => void (await host.stop()));

async function instance(env: Record<string, string>): Promise<{ t: TestApp; owner: string }> {
  const t = await createTestApp(env);
  const owner = await bootstrapOwner(t);
  await createGithubIntegration(t, owner, host);
  return { t, owner };
}

/** A finished build with `lines` log lines and one artifact of `artifactBytes`. */
async function finishedBuild(
  t: TestApp,
  pipelineId: string,
  branch: string,
  end: "succeed" | "fail" | "cancel",
  o: { lines?: number; artifactBytes?: number } = {},
) {
  const { build } = await createBuild(t.ctx, { pipelineId, branch, commitSha: SHA_A, triggerType: "manual", concurrencyKey: null });
  await transitionBuild(t.ctx, build.id, "start");
  for (let i = 0; i < (o.lines ?? 3); i++) await appendSystemLine(t.db, build.id, `line ${i} ${"x".repeat(200)}`, t.clock.now());
  const bytes = new Uint8Array(o.artifactBytes ?? 1000).fill(7);
  const artifact = await storeArtifact(t.db, t.ctx.objects, {
    buildId: build.id,
    jobId: "job",
    path: "app.apk",
    body: new Blob([bytes]).stream(),
    expectedSha256: sha256Hex(bytes),
    maxBytes: 1e9,
    declaredLength: bytes.length,
    now: t.clock.now(),
  });
  if (end !== "cancel") await transitionBuild(t.ctx, build.id, end);
  else await transitionBuild(t.ctx, build.id, "cancel");
  return { id: build.id, file: artifactFile(t.dataDir, build.id, artifact.id) };
}

/** The owner's session: the test clock moves days at a time, past any earlier session's expiry. */
const signIn = (t: TestApp) => localLogin(t, "owner@example.test");

async function seen(t: TestApp, _owner: string, buildId: string) {
  const token = await signIn(t);
  const build = (await t.call("GET", `/v1/builds/${buildId}`, { token })).body.build;
  const logs = (await t.call("GET", `/v1/builds/${buildId}/logs`, { token })).body;
  const artifacts = (await t.call("GET", `/v1/builds/${buildId}/artifacts`, { token })).body.artifacts;
  return {
    logs_deleted: build.logs_deleted_at !== null,
    artifacts_deleted: build.artifacts_deleted_at !== null,
    log_lines: logs.length,
    artifacts: artifacts.length,
  };
}

const KEPT = { logs_deleted: false, artifacts_deleted: false, log_lines: 3, artifacts: 1 };
const LOGS_GONE = { logs_deleted: true, artifacts_deleted: false, log_lines: 0, artifacts: 1 };
const ALL_GONE = { logs_deleted: true, artifacts_deleted: true, log_lines: 0, artifacts: 0 };

function metric(text: string, name: string, kind: string): number {
  return Number(new RegExp(`^${name}\\{kind="${kind}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? NaN);
}

describe("retention of build logs and artifacts", () => {
  test("by age with the instance defaults: logs after ROOST_LOG_RETENTION_DAYS, artifacts after ROOST_ARTIFACT_RETENTION_DAYS, the latest success of each branch kept; counted in /metrics", async () => {
    const { t, owner } = await instance({ ROOST_LOG_RETENTION_DAYS: "7", ROOST_ARTIFACT_RETENTION_DAYS: "14", ROOST_KEEP_BUILDS: "0" });
    try {
      const project = await createProject(t, owner);
      const pipeline = await createPipeline(t, owner, project.id);
      const oldSuccess = await finishedBuild(t, pipeline.id, "main", "succeed");
      const failed = await finishedBuild(t, pipeline.id, "main", "fail");
      const latestSuccess = await finishedBuild(t, pipeline.id, "main", "succeed");
      const feature = await finishedBuild(t, pipeline.id, "feature", "cancel");
      t.clock.advance(6 * DAY);
      const fresh = await finishedBuild(t, pipeline.id, "feature", "fail");

      expect(await enforceRetention(t.ctx)).toMatchObject({ logs: 0, artifacts: 0 });
      t.clock.advance(2 * DAY);
      const first = await enforceRetention(t.ctx);
      expect(first).toMatchObject({ logs: 3, log_lines: 9, artifacts: 0, more: false });
      expect(await seen(t, owner, oldSuccess.id)).toEqual(LOGS_GONE);
      expect(await seen(t, owner, failed.id)).toEqual(LOGS_GONE);
      expect(await seen(t, owner, feature.id)).toEqual(LOGS_GONE);
      expect(await seen(t, owner, latestSuccess.id)).toEqual(KEPT);
      expect(await seen(t, owner, fresh.id)).toEqual(KEPT);
      expect(existsSync(oldSuccess.file)).toBe(true);

      t.clock.advance(7 * DAY);
      const second = await enforceRetention(t.ctx);
      // The build of day 6 is now 9 days old: its log goes too, its artifact (14 days) stays.
      expect(second).toMatchObject({ logs: 1, artifacts: 3, artifact_bytes: 3000 });
      for (const b of [oldSuccess, failed, feature]) {
        expect(await seen(t, owner, b.id)).toEqual(ALL_GONE);
        expect(existsSync(b.file)).toBe(false);
      }
      expect(await seen(t, owner, latestSuccess.id)).toEqual(KEPT);
      expect(existsSync(latestSuccess.file)).toBe(true);
      expect(await seen(t, owner, fresh.id)).toEqual(LOGS_GONE);

      const text = (await t.call("GET", "/metrics")).text;
      expect(metric(text, "roost_retention_deleted_total", "logs")).toBe(4);
      expect(metric(text, "roost_retention_deleted_total", "artifacts")).toBe(3);
      expect(metric(text, "roost_retention_reclaimed_bytes_total", "artifacts")).toBe(3000);
      expect(metric(text, "roost_retention_reclaimed_bytes_total", "logs")).toBe(first.log_bytes + second.log_bytes);
      expect(first.log_bytes).toBeGreaterThan(3 * 3 * 200);
    } finally {
      t.close();
    }
  });

  test("a project keeps the newest N builds per pipeline (its override beats the instance default); running and just-finished builds are left alone", async () => {
    const { t, owner: first } = await instance({ ROOST_LOG_RETENTION_DAYS: "0", ROOST_ARTIFACT_RETENTION_DAYS: "0", ROOST_KEEP_BUILDS: "0" });
    let owner = first;
    try {
      const project = await createProject(t, owner);
      const a = await createPipeline(t, owner, project.id);
      const b = await createPipeline(t, owner, project.id);
      const onA = [];
      for (let i = 0; i < 4; i++) onA.push(await finishedBuild(t, a.id, "main", "fail"));
      const onB = await finishedBuild(t, b.id, "main", "fail");
      const { build: running } = await createBuild(t.ctx, { pipelineId: a.id, branch: "main", commitSha: SHA_A, triggerType: "manual", concurrencyKey: null });
      await transitionBuild(t.ctx, running.id, "start");
      t.clock.advance(10 * DAY);
      owner = await signIn(t);

      const developer = await userWithRole(t, owner, "developer");
      await t.call("PUT", `/v1/projects/${project.id}/members/${developer.id}`, { token: owner, body: { role: "developer" } });
      const denied = await t.call("PUT", `/v1/projects/${project.id}/retention`, { token: developer.token, body: { keep_builds: 2 } });
      expect(denied.status).toBe(403);
      expect(denied.body).toEqual({ code: "forbidden", message: "This needs the maintainer role on the project; yours is developer." });
      const put = await t.call("PUT", `/v1/projects/${project.id}/retention`, { token: owner, body: { keep_builds: 2 } });
      expect(put.status).toBe(200);
      expect(put.body).toEqual({
        log_retention_days: null,
        artifact_retention_days: null,
        keep_builds: 2,
        effective: { log_retention_days: 0, artifact_retention_days: 0, keep_builds: 2 },
        instance_default: { log_retention_days: 0, artifact_retention_days: 0, keep_builds: 0 },
      });
      expect((await t.call("GET", `/v1/projects/${project.id}/retention`, { token: developer.token })).body).toEqual(put.body);

      // Pipeline a: the running build and the newest finished one are the newest two.
      expect(await enforceRetention(t.ctx)).toMatchObject({ logs: 3, artifacts: 3 });
      expect(await Promise.all(onA.map((x) => seen(t, owner, x.id)))).toEqual([ALL_GONE, ALL_GONE, ALL_GONE, KEPT]);
      expect(await seen(t, owner, onB.id)).toEqual(KEPT);
      expect((await seen(t, owner, running.id)).logs_deleted).toBe(false);

      // Two newer builds push the old newest and the one that was running out of the newest two;
      // the one that finished a moment ago waits out the grace period.
      const justNow = await finishedBuild(t, a.id, "main", "fail");
      const newest = await finishedBuild(t, a.id, "main", "fail");
      await transitionBuild(t.ctx, running.id, "fail");
      expect(await enforceRetention(t.ctx)).toMatchObject({ logs: 1, artifacts: 1 });
      expect(await seen(t, owner, onA[3]!.id)).toEqual(ALL_GONE);
      expect((await seen(t, owner, running.id)).logs_deleted).toBe(false);
      t.clock.advance(GRACE_SECONDS + 1);
      expect(await enforceRetention(t.ctx)).toMatchObject({ logs: 1, artifacts: 0 });
      expect((await seen(t, owner, running.id)).logs_deleted).toBe(true);
      expect(await seen(t, owner, justNow.id)).toEqual(KEPT);
      expect(await seen(t, owner, newest.id)).toEqual(KEPT);
    } finally {
      t.close();
    }
  });

  test("the body is checked: negative days and unknown fields answer 400 invalid_request", async () => {
    const { t, owner } = await instance({});
    try {
      const project = await createProject(t, owner);
      const bad = await t.call("PUT", `/v1/projects/${project.id}/retention`, { token: owner, body: { log_retention_days: -1 } });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({
        code: "invalid_request",
        message: "The body is not valid: body.log_retention_days: must be at least 0",
        details: [{ path: "body.log_retention_days", message: "must be at least 0" }],
      });
      const unknown = await t.call("PUT", `/v1/projects/${project.id}/retention`, { token: owner, body: { days: 3 } });
      expect(unknown.status).toBe(400);
      expect(unknown.body.code).toBe("invalid_request");
      const defaults = await t.call("GET", `/v1/projects/${project.id}/retention`, { token: owner });
      expect(defaults.body.effective).toEqual({ log_retention_days: 90, artifact_retention_days: 90, keep_builds: 0 });
    } finally {
      t.close();
    }
  });

  test("a pass whose write transaction runs again counts in /metrics only what the run that committed deleted", async () => {
    const { t, owner } = await instance({ ROOST_LOG_RETENTION_DAYS: "1", ROOST_ARTIFACT_RETENTION_DAYS: "30", ROOST_KEEP_BUILDS: "0" });
    try {
      const project = await createProject(t, owner);
      const pipeline = await createPipeline(t, owner, project.id);
      const builds = [await finishedBuild(t, pipeline.id, "main", "fail"), await finishedBuild(t, pipeline.id, "main", "fail")];
      t.clock.advance(2 * DAY);
      // The write queue runs a transaction's work again from its start when the database took the
      // write lock back (lib/db/write-queue.ts). Here this pass's first run is rolled back, and
      // another daemon's pass on the same database deletes the logs before the rerun.
      let other: Awaited<ReturnType<typeof enforceRetention>> | undefined;
      const rerun = rerunningFirstTransaction(t.db, async () => void (other = await enforceRetention(t.ctx)));
      const pass = await enforceRetention({ ...t.ctx, db: rerun.db });
      expect(rerun.reruns).toBe(1);
      expect(other).toMatchObject({ logs: 2, log_lines: 6 });
      expect(pass).toMatchObject({ logs: 0, log_lines: 0, log_bytes: 0 });
      for (const b of builds) expect(await seen(t, owner, b.id)).toEqual(LOGS_GONE);
      const text = (await t.call("GET", "/metrics")).text;
      expect(metric(text, "roost_retention_deleted_total", "logs")).toBe(2);
      expect(metric(text, "roost_retention_reclaimed_bytes_total", "logs")).toBe(other!.log_bytes);
    } finally {
      t.close();
    }
  });

  test("bounded batches: a pass takes at most its limit of builds and says more are left", async () => {
    const { t, owner } = await instance({ ROOST_LOG_RETENTION_DAYS: "1", ROOST_ARTIFACT_RETENTION_DAYS: "1" });
    try {
      const project = await createProject(t, owner);
      const pipeline = await createPipeline(t, owner, project.id);
      for (let i = 0; i < 5; i++) await finishedBuild(t, pipeline.id, "main", "fail", { lines: 1, artifactBytes: 10 });
      t.clock.advance(2 * DAY);
      expect(await enforceRetention(t.ctx, 2)).toMatchObject({ logs: 2, artifacts: 2, more: true });
      expect(await enforceRetention(t.ctx, 2)).toMatchObject({ logs: 2, artifacts: 2, more: true });
      expect(await enforceRetention(t.ctx, 2)).toMatchObject({ logs: 1, artifacts: 1, more: false });
      expect(await enforceRetention(t.ctx, 2)).toMatchObject({ logs: 0, artifacts: 0, more: false });
    } finally {
      t.close();
    }
  });

  test("the space comes back: a new database uses incremental auto_vacuum; its freed pages go back to the file system (bun:sqlite) and new lines reuse them rather than grow the file", async () => {
    const { t, owner } = await instance({ ROOST_LOG_RETENTION_DAYS: "1" });
    try {
      expect(num((await one(t.db, "PRAGMA auto_vacuum"))!, "auto_vacuum")).toBe(2);
      const project = await createProject(t, owner);
      const pipeline = await createPipeline(t, owner, project.id);
      const pages = async () => num((await one(t.db, "PRAGMA page_count"))!, "page_count");
      const start = await pages();
      for (let i = 0; i < 3; i++) await finishedBuild(t, pipeline.id, "main", "fail", { lines: 400 });
      const full = await pages();
      // 1,200 lines of about 210 bytes fill some 60 pages of 4 KiB.
      expect(full).toBeGreaterThan(start + 50);
      t.clock.advance(2 * DAY);
      expect(await enforceRetention(t.ctx)).toMatchObject({ logs: 3, log_lines: 1200 });
      if (t.db.driver === "bun:sqlite") {
        expect(num((await one(t.db, "PRAGMA freelist_count"))!, "freelist_count")).toBe(0);
        expect(await pages()).toBeLessThan(full - 50);
      }
      for (let i = 0; i < 3; i++) await finishedBuild(t, pipeline.id, "main", "fail", { lines: 400 });
      expect(await pages()).toBeLessThan(full + 10);
    } finally {
      t.close();
    }
  });

  test("with retention off and the data directory past ROOST_DATA_DIR_WARN_BYTES, an operator incident warns; it resolves once retention is on", async () => {
    const { t, owner } = await instance({
      ROOST_LOG_RETENTION_DAYS: "0",
      ROOST_ARTIFACT_RETENTION_DAYS: "0",
      ROOST_KEEP_BUILDS: "0",
      ROOST_DATA_DIR_WARN_BYTES: "100000",
    });
    try {
      const project = await createProject(t, owner);
      const pipeline = await createPipeline(t, owner, project.id);
      await finishedBuild(t, pipeline.id, "main", "fail", { artifactBytes: 200_000 });
      const check = await checkDataDirGrowth(t.ctx);
      expect(check.projects_keeping_everything).toBe(1);
      expect(check.bytes).toBeGreaterThan(200_000);
      const open = (await t.call("GET", "/v1/operator-incidents?status=open", { token: owner })).body.incidents.filter(
        (i: any) => i.reason === "retention_off",
      );
      expect(open).toHaveLength(1);
      expect(open[0]).toMatchObject({ severity: "warning", status: "open", resource_kind: "instance", resource_id: "data_dir", resource_name: t.dataDir });
      expect(open[0].message).toMatch(
        /^The data directory holds [\d.]+ GiB, more than ROOST_DATA_DIR_WARN_BYTES \([\d.]+ GiB\), and retention is off for 1 project\(s\): their builds' logs and artifacts are kept forever, so the disk will fill\.$/,
      );
      expect(open[0].repair_action).toContain("PUT /v1/projects/{project_id}/retention");
      expect((await t.call("GET", "/metrics")).text).toMatch(new RegExp(`^roost_data_dir_bytes ${check.bytes}$`, "m"));

      await t.call("PUT", `/v1/projects/${project.id}/retention`, { token: owner, body: { artifact_retention_days: 30 } });
      expect((await checkDataDirGrowth(t.ctx)).projects_keeping_everything).toBe(0);
      const after = (await t.call("GET", "/v1/operator-incidents?status=open", { token: owner })).body.incidents.filter(
        (i: any) => i.reason === "retention_off",
      );
      expect(after).toEqual([]);
    } finally {
      t.close();
    }
  });
});
