// Dependency caches shared by every runner of a project through an S3-compatible object store
// (docs/runners.md "Shared caches"), against a real S3 server (tests/support/s3-server.ts): what one
// runner's job saves another runner's job restores; a build reads its own scope and the default
// branch's, never a pull request's; entries are immutable and verified before they are recorded;
// another project's job is refused; unused and over-cap entries go with their archives.
import { describe, expect, test } from "bun:test";
import type { TestApp } from "../helpers/app.ts";
import { SHA_A, createPipeline, createProject, startS3CiFixture, fixturePerFile } from "../helpers/ci.ts";
import type { S3Server } from "../support/s3-server.ts";
import { evictCaches } from "../../lib/caches/store.ts";

let t: TestApp, owner: string, projectId: string, s3: S3Server;
fixturePerFile(
  () => startS3CiFixture({ ROOST_SHARED_CACHE_MAX_MB: "1" }),
  (fixture) => ({ t, owner, projectId, s3 } = fixture),
);

const sha256 = (data: string | Uint8Array) => new Bun.CryptoHasher("sha256").update(data).digest("hex");
const VERSION = "0123456789abcdef";

/**
 * A new runner holding the job of a new build of `branch` (a pull request's when `pullRequest` is
 * its ref), of a new pipeline of the project (one build of a pipeline runs at a time): caches are
 * the project's, whichever pipeline saved them.
 */
async function runningJob(o: { branch?: string; pullRequest?: string; project?: string } = {}) {
  const project = o.project ?? projectId;
  const created = await t.call("POST", "/v1/runners", { token: owner, body: { name: `r-${crypto.randomUUID().slice(0, 6)}` } });
  const { id } = created.body.runner;
  const token: string = created.body.token;
  await t.call("POST", `/v1/runners/${id}/connect`, {
    token,
    body: { capabilities: { os: "linux", arch: "x64", flutter_versions: ["3.24.5"], xcode: null }, version: "test" },
  });
  const build = (
    await t.call("POST", `/v1/projects/${project}/builds`, {
      token: owner,
      body: { pipeline_id: (await createPipeline(t, owner, project)).id, commit_sha: SHA_A, branch: o.branch ?? "main" },
    })
  ).body.build;
  if (o.pullRequest)
    await t.db.execute({ sql: "UPDATE builds SET trigger_event = 'pull_request', trigger_ref = ? WHERE id = ?", args: [o.pullRequest, build.id] });
  const claimed = (await t.call("POST", `/v1/runners/${id}/jobs/claim`, { token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } })).body.job;
  expect(claimed.build.id).toBe(build.id);
  const jobId: string = claimed.job_id;
  const base = `/v1/runners/${id}/jobs/${jobId}/caches`;
  return {
    runnerId: id as string,
    token,
    jobId,
    claimed,
    find: (key: string, version = VERSION) => t.call("GET", `${base}?key=${key}&version=${version}`, { token }),
    save: (key: string, body: string, digest = sha256(body), version = VERSION) =>
      t.call("PUT", `${base}?key=${key}&version=${version}`, {
        token,
        raw: body,
        contentType: "application/octet-stream",
        headers: { "x-roost-cache-sha256": digest },
      }),
    download: (cacheId: string) => t.call("GET", `${base}/${cacheId}`, { token }),
  };
}

describe("shared caches", () => {
  test("a cache one runner's job saves is restored by another runner's job, through the bucket", async () => {
    const a = await runningJob();
    expect(a.claimed.shared_caches).toBe(true);
    expect((await a.find("k-restore")).body).toEqual({ cache: null });
    const archive = "tar archive of $PUB_CACHE";
    const saved = await a.save("k-restore", archive);
    expect(saved.status).toBe(201);
    expect(saved.body.cache).toMatchObject({
      key: "k-restore",
      version: VERSION,
      scope: "main",
      pipeline_id: a.claimed.build.pipeline_id,
      size: archive.length,
      sha256: sha256(archive),
    });
    expect(await s3.keys()).toContain(`caches/${projectId}/${saved.body.cache.id}`);

    const b = await runningJob();
    expect(b.runnerId).not.toBe(a.runnerId);
    const found = await b.find("k-restore");
    expect(found.status).toBe(200);
    expect(found.body.cache).toMatchObject({ id: saved.body.cache.id, exact: true, scope: "main" });
    const download = await b.download(saved.body.cache.id);
    expect(download.status).toBe(200);
    expect(download.text).toBe(archive);
    expect(download.headers.get("x-roost-cache-sha256")).toBe(sha256(archive));
  });

  test("another branch falls back to the default branch's newest entry of the same version, never another version's", async () => {
    const main = await runningJob();
    const older = (await main.save("k-fallback-1", "older")).body.cache;
    const newer = (await (await runningJob()).save("k-fallback-2", "newer")).body.cache;
    expect(newer.created_at).toBeGreaterThanOrEqual(older.created_at);
    const feature = await runningJob({ branch: "feature" });
    expect((await feature.find("k-feature")).body.cache).toMatchObject({ scope: "main", exact: false });
    expect((await feature.find("k-feature", "fedcba9876543210")).body).toEqual({ cache: null });
    // What the feature branch saves is its own: main does not read it.
    const own = (await feature.save("k-feature", "feature deps")).body.cache;
    expect(own.scope).toBe("feature");
    const again = await runningJob({ branch: "feature" });
    expect((await again.find("k-feature")).body.cache).toMatchObject({ id: own.id, exact: true });
    const onMain = await runningJob();
    expect((await onMain.find("k-feature")).body.cache).toMatchObject({ scope: "main", exact: false });
    expect((await onMain.download(own.id)).body).toEqual({ code: "not_found", message: "No such cache for this job (or retention deleted it)." });
  });

  test("a pull request's job saves only in its pull request's scope: the default branch never restores it", async () => {
    const pr = await runningJob({ branch: "main", pullRequest: "refs/pull/7/head" });
    const saved = await pr.save("k-pr", "planted by a pull request");
    expect(saved.status).toBe(201);
    expect(saved.body.cache.scope).toBe("pull_request:refs/pull/7/head");
    const main = await runningJob();
    const found = (await main.find("k-pr")).body.cache;
    expect(found?.id).not.toBe(saved.body.cache.id);
    expect(found?.scope).toBe("main");
    expect((await main.download(saved.body.cache.id)).status).toBe(404);
    // The pull request itself reads the default branch's.
    const prAgain = await runningJob({ branch: "main", pullRequest: "refs/pull/8/head" });
    expect((await prAgain.find("k-pr")).body.cache).toMatchObject({ scope: "main", exact: false });
  });

  test("entries are immutable and verified: a key saved twice is 409, a wrong digest 422 and nothing is kept", async () => {
    const job = await runningJob();
    expect((await job.save("k-once", "first")).status).toBe(201);
    expect((await job.save("k-once", "second")).body).toEqual({
      code: "cache_exists",
      message: "This build's scope main already has a cache with key k-once; entries are never overwritten.",
    });
    const keysBefore = await s3.keys();
    const wrong = await job.save("k-corrupt", "bytes", "0".repeat(64));
    expect(wrong.status).toBe(422);
    expect(wrong.body).toEqual({
      code: "cache_checksum_mismatch",
      message: `The upload's SHA-256 is ${sha256("bytes")}, not the announced ${"0".repeat(64)}; upload again.`,
    });
    expect(await s3.keys()).toEqual(keysBefore);
    expect((await job.find("k-corrupt")).body.cache?.key).not.toBe("k-corrupt");
    expect((await job.save("k-nodigest", "x", "nothex")).body).toEqual({
      code: "invalid_request",
      message: "Send the archive's SHA-256 (hex) in X-Roost-Cache-SHA256.",
    });
  });

  test("a job of another project, or another runner's job, is refused", async () => {
    const saved = (await (await runningJob()).save("k-private", "project one's deps")).body.cache;
    const otherProject = (await createProject(t, owner)).id;
    const other = await runningJob({ project: otherProject });
    expect(await other.download(saved.id)).toMatchObject({ status: 404, body: { code: "not_found" } });
    expect((await other.find("k-private")).body).toEqual({ cache: null });
    // A runner naming a job it does not hold (the other project's runner, this project's job).
    const mine = await runningJob();
    const stolen = await t.call("GET", `/v1/runners/${other.runnerId}/jobs/${mine.jobId}/caches/${saved.id}`, { token: other.token });
    expect(stolen.status).toBe(409);
    expect(stolen.body).toEqual({ code: "job_not_assigned", message: "This job is not assigned to this runner." });
    const planted = await t.call("PUT", `/v1/runners/${other.runnerId}/jobs/${mine.jobId}/caches?key=k-plant&version=${VERSION}`, {
      token: other.token,
      raw: "x",
      contentType: "application/octet-stream",
      headers: { "x-roost-cache-sha256": sha256("x") },
    });
    expect(planted.body.code).toBe("job_not_assigned");
    // Another runner's path with this runner's token.
    const cross = await t.call("GET", `/v1/runners/${mine.runnerId}/jobs/${mine.jobId}/caches?key=k&version=${VERSION}`, { token: other.token });
    expect(cross.status).toBe(403);
  });

  test("a project's least recently used entries go once its caches exceed ROOST_SHARED_CACHE_MAX_MB; unused ones after the days", async () => {
    const project = (await createProject(t, owner)).id;
    const job = await runningJob({ project });
    const big = "x".repeat(600 * 1024);
    const first = (await job.save("k-big-1", big)).body.cache;
    const second = (await job.save("k-big-2", big)).body.cache;
    expect(second.id).toBeDefined();
    const keys = await s3.keys();
    expect(keys).not.toContain(`caches/${project}/${first.id}`);
    expect(keys).toContain(`caches/${project}/${second.id}`);
    expect((await job.download(first.id)).status).toBe(404);
    expect((await job.save("k-huge", "y".repeat(1024 * 1024 + 1))).body).toEqual({
      code: "payload_too_large",
      message: `A cache archive is at most ${1024 * 1024} bytes (ROOST_SHARED_CACHE_MAX_MB).`,
    });

    // Seven days (the default ROOST_SHARED_CACHE_DAYS) without a restore.
    const now = t.ctx.clock.now();
    expect(await evictCaches(t.db, t.ctx.objects, t.ctx.log, { unusedBefore: now - 7 * 86_400 })).toBe(0);
    await t.db.execute({ sql: "UPDATE cache_entries SET last_used_at = ? WHERE id = ?", args: [now - 8 * 86_400, second.id] });
    expect(await evictCaches(t.db, t.ctx.objects, t.ctx.log, { unusedBefore: now - 7 * 86_400 })).toBe(1);
    expect(await s3.keys()).not.toContain(`caches/${project}/${second.id}`);
    expect((await job.find("k-big-2")).body).toEqual({ cache: null });
  });

  test("over the cap, the entries restored longest ago go first, and only as many as the new one needs", async () => {
    const project = (await createProject(t, owner)).id;
    const job = await runningJob({ project });
    const now = t.ctx.clock.now();
    const saved = [];
    for (const [i, usedDaysAgo] of [3, 1, 2].entries()) {
      const cache = (await job.save(`k-${i}`, "z".repeat(300 * 1024))).body.cache;
      await t.db.execute({ sql: "UPDATE cache_entries SET last_used_at = ? WHERE id = ?", args: [now - usedDaysAgo * 86_400, cache.id] });
      saved.push(cache.id);
    }
    // 900 KiB stored; 300 KiB more is over the 1 MiB cap: the one used three days ago goes, alone.
    const fourth = (await job.save("k-3", "z".repeat(300 * 1024))).body.cache;
    const keys = await s3.keys();
    expect(keys).not.toContain(`caches/${project}/${saved[0]}`);
    for (const id of [saved[1], saved[2], fourth.id]) expect(keys).toContain(`caches/${project}/${id}`);
    const total = await t.db.execute({ sql: "SELECT bytes FROM cache_project_bytes WHERE project_id = ?", args: [project] });
    expect(Number(total.rows[0]!.bytes)).toBe(3 * 300 * 1024);
  });
});
