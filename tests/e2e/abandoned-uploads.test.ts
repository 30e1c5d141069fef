// A daemon killed (kill -9) during artifact uploads leaves files no database row refers to: a
// .partial upload cut short, or a complete file renamed into place whose row was never written.
// The next start removes those once they are an hour old (lib/artifacts/artifacts.ts
// removeUnreferencedFiles), and keeps stored artifacts and young files, which another daemon
// process on the same data dir may still be writing or recording. Real `roost serve` processes.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDaemon, type Daemon } from "../helpers/daemon.ts";
import { claimJob, createGithubProject, loginOwner, projectClient, uploadArtifact } from "../helpers/ci-daemon.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";

const work = mkdtempSync(join(tmpdir(), "roost-abandoned-uploads-"));
const dataDir = join(work, "data");
let daemon: Daemon | undefined;
let host: HostApiStandIn;
let owner = "";
const CONTENT = Buffer.from("release apk bytes");

afterAll(async () => {
  await daemon?.stop();
  await host?.stop();
  rmSync(work, { recursive: true, force: true });
});

const hoursAgo = (h: number) => Date.now() / 1000 - h * 60 * 60;
function plant(dir: string, name: string, bytes: number, ageHours: number): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, name), Buffer.alloc(bytes, 0x61));
  utimesSync(join(dir, name), hoursAgo(ageHours), hoursAgo(ageHours));
}

/** A build with one stored artifact, through the API as a runner would upload it. */
async function buildWithArtifact(d: Daemon): Promise<{ buildId: string; artifactId: string }> {
  host = await startHostApiStandIn();
  host.github.repos.push({ id: 77, full_name: "acme/app", default_branch: "main", private: true });
  owner = await loginOwner(d.url);
  const ci = projectClient(d.url, owner, (await createGithubProject(d.url, owner, host)).id);
  await ci.queueBuild(await ci.createPipeline({ name: "release" }), "a".repeat(40));
  const runner = await ci.registerRunner({ name: "linux-1" });
  const job = await claimJob(d.url, runner, { capabilities: { os: "linux", arch: "x64" }, version: "test" });
  const res = await uploadArtifact(d.url, runner, job.job_id, "build/app.apk", CONTENT);
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { buildId: job.build.id, artifactId: (res.body as { artifact: { id: string } }).artifact.id };
}

let stored = { buildId: "", artifactId: "" };
beforeAll(async () => {
  daemon = await startDaemon({ dataDir, cleanup: false });
  stored = await buildWithArtifact(daemon);
  // Killed with no chance to clean up, as in the outside test run.
  await daemon.stop("SIGKILL");
  daemon = undefined;
}, 60_000);

test("a start removes old files no row refers to, complete or partial, and keeps stored artifacts and young uploads", async () => {
  const dir = join(dataDir, "artifacts", stored.buildId);
  // What the killed daemon left: a complete upload renamed into place without its row, and a
  // partial one; and what another process may be doing right now: a young partial and a young
  // complete file whose row is about to be written.
  plant(dir, "killed-before-its-row", 7000, 2);
  plant(dir, "killed-mid-upload.partial", 900, 2);
  plant(dir, "uploading.partial", 10, 0);
  plant(dir, "renamed-row-coming", 10, 0);
  // The stored artifact is old too: its row keeps it.
  utimesSync(join(dir, stored.artifactId), hoursAgo(48), hoursAgo(48));
  // A deleted build's directory: its files and then the directory go.
  plant(join(dataDir, "artifacts", "deleted-build"), "orphan", 100, 3);

  daemon = await startDaemon({ dataDir, cleanup: false });
  expect(readdirSync(dir).sort()).toEqual([stored.artifactId, "renamed-row-coming", "uploading.partial"].sort());
  expect(existsSync(join(dataDir, "artifacts", "deleted-build"))).toBe(false);
  expect(daemon.logs.find((l) => l.msg === "removed artifact files no database row refers to")).toMatchObject({ files: 3, bytes: 8000 });
  const download = await fetch(`${daemon.url}/v1/builds/${stored.buildId}/artifacts/${stored.artifactId}`, { headers: { authorization: `Bearer ${owner}` } });
  expect(download.status).toBe(200);
  expect(Buffer.from(await download.arrayBuffer())).toEqual(CONTENT);
}, 60_000);

test("beside a database with no builds (not this data dir's, perhaps), no artifact file is removed", async () => {
  const other = join(work, "other-data");
  plant(join(other, "artifacts", "some-build"), "some-artifact", 10, 48);
  const fresh = await startDaemon({ dataDir: other, cleanup: false });
  try {
    expect(readdirSync(join(other, "artifacts", "some-build"))).toEqual(["some-artifact"]);
    expect(fresh.logs.some((l) => l.msg === "artifact files kept: the database has no builds, so it may not be this data directory's")).toBe(true);
  } finally {
    await fresh.stop();
  }
}, 60_000);
