// Artifacts in an S3-compatible object store (docs/operations.md "Object storage"), against a real
// S3 server that checks signatures (tests/support/s3-server.ts): two daemons share one database
// and one bucket but not a data directory, so either serves what the other stored; uploads are
// verified before they are acknowledged; presigned redirects; retention deletes the objects; a
// wrong secret is a clear JSON error, never a 500.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { TestApp } from "../helpers/app.ts";
import { SHA_A, createPipeline, daemonOnSameDatabase, startS3CiFixture, type S3CiFixture } from "../helpers/ci.ts";
import { runnerClient } from "../helpers/publishing.ts";
import type { S3Server } from "../support/s3-server.ts";
import { transitionBuild } from "../../lib/builds/transition.ts";
import { enforceRetention, GRACE_SECONDS } from "../../lib/retention/retention.ts";
import { loadConfig } from "../../lib/daemon/config.ts";

const DAY = 86_400;
let fixture: S3CiFixture;
let s3: S3Server;
/** The daemon the runner talks to. */
let a: TestApp;
/** Another daemon on the same database and bucket, with a data directory of its own. */
let b: TestApp;
let owner: string;

beforeAll(async () => {
  ({ t: a, owner, s3 } = fixture = await startS3CiFixture({ ROOST_MAX_ARTIFACT_BYTES: "4096", ROOST_ARTIFACT_RETENTION_DAYS: "1" }));
  b = await daemonOnSameDatabase(fixture, s3.env());
});
afterAll(async () => {
  b.close();
  await fixture.stop();
});

const sha256 = (data: string | Uint8Array) => new Bun.CryptoHasher("sha256").update(data).digest("hex");

/** A runner of daemon `a` holding the job of a new build. */
async function runningJob() {
  const { id, token, claim } = await runnerClient(a, owner, { os: "linux", arch: "x64", flutter_versions: ["3.24.5"], xcode: null });
  const pipeline = await createPipeline(a, owner, fixture.projectId);
  const build = (await a.call("POST", `/v1/projects/${fixture.projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
    .build;
  const job = (await claim()).body.job;
  expect(job.build.id).toBe(build.id);
  const upload = (app: TestApp, path: string, body: string, digest = sha256(body)) =>
    app.call("PUT", `/v1/runners/${id}/jobs/${job.job_id}/artifacts?path=${encodeURIComponent(path)}`, {
      token,
      raw: body,
      contentType: "application/octet-stream",
      headers: { "x-roost-artifact-sha256": digest },
    });
  return { buildId: build.id as string, upload: Object.assign(upload, { runnerId: id as string, jobId: job.job_id as string, token }) };
}

describe("artifacts in an S3-compatible store", () => {
  test("an artifact uploaded through one daemon is downloaded through another that shares only the database and the bucket", async () => {
    const { buildId, upload } = await runningJob();
    const content = "PK\u0003\u0004 an apk stored in the bucket";
    const stored = await upload(a, "build/app/app-release.apk", content);
    expect(stored.status).toBe(201);
    const id = stored.body.artifact.id;
    expect(await s3.keys()).toContain(`artifacts/${buildId}/${id}`);
    // Neither data directory holds it.
    expect(existsSync(join(a.dataDir, "artifacts"))).toBe(false);
    expect(existsSync(join(b.dataDir, "artifacts"))).toBe(false);

    const download = await b.call("GET", `/v1/builds/${buildId}/artifacts/${id}`, { token: owner });
    expect(download.status).toBe(200);
    expect(download.text).toBe(content);
    expect(download.headers.get("x-roost-artifact-sha256")).toBe(sha256(content));
    expect(download.headers.get("content-disposition")).toBe('attachment; filename="app-release.apk"');
  });

  test("an upload whose bytes do not match the announced SHA-256, or that is too large, is refused and leaves no object", async () => {
    const { buildId, upload } = await runningJob();
    const before = await s3.keys();
    const wrong = await upload(a, "app.apk", "some bytes", "0".repeat(64));
    expect(wrong.status).toBe(422);
    expect(wrong.body).toEqual({
      code: "artifact_checksum_mismatch",
      message: `The upload's SHA-256 is ${sha256("some bytes")}, not the announced ${"0".repeat(64)}; upload again.`,
    });
    const big = "x".repeat(5000);
    expect((await upload(a, "big.bin", big)).body).toEqual({ code: "payload_too_large", message: "Artifacts are at most 4096 bytes." });
    expect(await s3.keys()).toEqual(before);
    expect((await b.call("GET", `/v1/builds/${buildId}/artifacts`, { token: owner })).body.artifacts).toEqual([]);
  });

  test("a large artifact goes up in parts (multipart upload) and comes back whole", async () => {
    const large = await daemonOnSameDatabase(fixture, { ...s3.env(), ROOST_MAX_ARTIFACT_BYTES: String(64 * 1024 ** 2) });
    try {
      const { buildId, upload } = await runningJob();
      // 40 MiB: three 16 MiB parts, the last one short; a pattern, so a part out of place shows.
      const bytes = new Uint8Array(40 * 1024 ** 2);
      for (let i = 0; i < bytes.length; i += 4096) bytes[i] = (i / 4096) % 251;
      const digest = sha256(bytes);
      const stored = await large.app.fetch(
        new Request(`http://127.0.0.1:8080/v1/runners/${upload.runnerId}/jobs/${upload.jobId}/artifacts?path=big.aab`, {
          method: "PUT",
          headers: { authorization: `Bearer ${upload.token}`, "x-roost-artifact-sha256": digest, "content-type": "application/octet-stream" },
          body: new Blob([bytes]).stream(),
        }),
        "127.0.0.1",
      );
      expect(stored.status).toBe(201);
      const id = ((await stored.json()) as { artifact: { id: string; size: number } }).artifact.id;
      const download = await b.app.fetch(
        new Request(`http://127.0.0.1:8080/v1/builds/${buildId}/artifacts/${id}`, { headers: { authorization: `Bearer ${owner}` } }),
        "127.0.0.1",
      );
      expect(download.status).toBe(200);
      expect(sha256(new Uint8Array(await download.arrayBuffer()))).toBe(digest);
    } finally {
      large.close();
    }
  });

  test("with ROOST_S3_PRESIGN_SECONDS a download answers 302 to a presigned URL the bucket serves, with the file name", async () => {
    const { buildId, upload } = await runningJob();
    const content = "bytes served by the bucket itself";
    const id = (await upload(a, "dist/app.ipa", content)).body.artifact.id;
    const presigning = await daemonOnSameDatabase(fixture, s3.env({ presignSeconds: 300 }));
    try {
      const res = await presigning.call("GET", `/v1/builds/${buildId}/artifacts/${id}`, { token: owner });
      expect(res.status).toBe(302);
      const location = res.headers.get("location")!;
      expect(location.startsWith(`${s3.endpoint}/${s3.bucket}/artifacts/${buildId}/${id}?`)).toBe(true);
      expect(new URL(location).searchParams.get("X-Amz-Expires")).toBe("300");
      expect(location).not.toContain(s3.secretAccessKey);
      const fetched = await fetch(location);
      expect(fetched.status).toBe(200);
      expect(await fetched.text()).toBe(content);
      expect(fetched.headers.get("content-disposition")).toBe('attachment; filename="app.ipa"');
      // Without authorization there is no redirect at all.
      expect((await presigning.call("GET", `/v1/builds/${buildId}/artifacts/${id}`)).status).toBe(401);
    } finally {
      presigning.close();
    }
  });

  test("a daemon with the wrong secret answers 502 object_store_error naming the settings to check, and records nothing", async () => {
    const wrong = await daemonOnSameDatabase(fixture, s3.env({ secret: "not-the-secret" }));
    try {
      const { buildId, upload } = await runningJob();
      const refused = await upload(wrong, "app.apk", "never stored");
      expect(refused.status).toBe(502);
      expect(refused.body).toEqual({
        code: "object_store_error",
        message: `The object store s3://${s3.bucket}/ at ${s3.endpoint} refused Roost's credentials (SignatureDoesNotMatch) while it tried to store an object: check ROOST_S3_ACCESS_KEY_ID and ROOST_S3_SECRET_ACCESS_KEY.`,
      });
      expect(refused.text).not.toContain("not-the-secret");
      expect((await a.call("GET", `/v1/builds/${buildId}/artifacts`, { token: owner })).body.artifacts).toEqual([]);

      const id = (await upload(a, "app.apk", "stored with the right secret")).body.artifact.id;
      const download = await wrong.call("GET", `/v1/builds/${buildId}/artifacts/${id}`, { token: owner });
      expect(download.status).toBe(502);
      expect(download.body).toEqual({
        code: "object_store_error",
        message: `The object store s3://${s3.bucket}/ at ${s3.endpoint} refused Roost's credentials (SignatureDoesNotMatch) while it tried to read an object: check ROOST_S3_ACCESS_KEY_ID and ROOST_S3_SECRET_ACCESS_KEY.`,
      });
    } finally {
      wrong.close();
    }
  });

  // Last: the clock moves past the owner's session.
  test("retention deletes the objects of the artifacts it deletes", async () => {
    const { buildId, upload } = await runningJob();
    const id = (await upload(a, "app.apk", "soon gone")).body.artifact.id;
    await transitionBuild(a.ctx, buildId, "fail");
    expect(await s3.keys()).toContain(`artifacts/${buildId}/${id}`);
    a.clock.advance(DAY + GRACE_SECONDS + 1);
    const pass = await enforceRetention(a.ctx);
    expect(pass.artifacts).toBeGreaterThanOrEqual(1);
    expect((await s3.keys()).filter((k) => k.startsWith(`artifacts/${buildId}/`))).toEqual([]);
    expect((await b.call("GET", `/v1/builds/${buildId}/artifacts/${id}`, { token: owner })).body).toEqual({
      code: "not_found",
      message: "No artifact with that id in this build.",
    });
  });
});

describe("configuration", () => {
  test("ROOST_OBJECT_STORE is disk by default; an s3:// URL needs both credentials and is parsed into bucket, prefix, endpoint and region", () => {
    expect(loadConfig({}).objectStore).toEqual({ kind: "disk" });
    expect(() => loadConfig({ ROOST_OBJECT_STORE: "s3://bucket?endpoint=http://127.0.0.1:9000" })).toThrow(
      "ROOST_OBJECT_STORE: an s3:// store needs ROOST_S3_ACCESS_KEY_ID and ROOST_S3_SECRET_ACCESS_KEY",
    );
    expect(() => loadConfig({ ROOST_OBJECT_STORE: "ftp://bucket" })).toThrow("ROOST_OBJECT_STORE: must be disk or s3://");
    expect(() => loadConfig({ ROOST_OBJECT_STORE: "s3://bucket?endpont=http://x" })).toThrow("ROOST_OBJECT_STORE: must be disk or s3://");
    const config = loadConfig({
      ROOST_OBJECT_STORE: "s3://ci-artifacts/roost/prod?endpoint=https://account.r2.cloudflarestorage.com&region=auto",
      ROOST_S3_ACCESS_KEY_ID: "key",
      ROOST_S3_SECRET_ACCESS_KEY: "secret",
    });
    expect(config.objectStore).toEqual({
      kind: "s3",
      bucket: "ci-artifacts",
      prefix: "roost/prod/",
      endpoint: "https://account.r2.cloudflarestorage.com",
      region: "auto",
      virtualHostedStyle: false,
      accessKeyId: "key",
      secretAccessKey: "secret",
      sessionToken: undefined,
      presignSeconds: 0,
    });
  });
});
