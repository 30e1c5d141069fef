// A real daemon whose data directory is a 4 MiB tmpfs, filled to the last byte: writes answer 507
// insufficient_storage (RFC 4918 §11.5), /readyz answers 503, an artifact upload leaves no file
// behind, and everything works again once space is freed. Mounting needs root (the CI container
// runs tests as root); the test says so instead of passing silently when it cannot mount.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statSync, writeSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { claimJob, createGithubProject, loginOwner, projectClient, uploadArtifact } from "../helpers/ci-daemon.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { DISK_FULL_MESSAGE } from "../../lib/daemon/disk.ts";

const work = mkdtempSync(join(tmpdir(), "roost-full-disk-"));
const mountPoint = join(work, "fs");
const dataDir = join(mountPoint, "data");
const fill = join(mountPoint, "fill");
let daemon: Daemon;
let host: HostApiStandIn;
let owner = "";
let runner = { id: "", token: "" };
let job = { job_id: "", build_id: "" };

const DISK_FULL = { code: "insufficient_storage", message: DISK_FULL_MESSAGE };

function sh(args: string[]): void {
  const done = Bun.spawnSync(args, { stderr: "pipe" });
  if (done.exitCode !== 0) throw new Error(`${args.join(" ")} failed (this test needs root to mount a tmpfs): ${done.stderr.toString()}`);
}

/** Fills the file system to the last byte, the way a runaway log or backup would. */
function fillDisk(): void {
  const fd = openSync(fill, "a");
  try {
    for (const size of [1024 * 1024, 64 * 1024, 4096, 512, 1]) {
      const chunk = Buffer.alloc(size, 0x61);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
      }
    }
  } finally {
    closeSync(fd);
  }
}

const upload = (path: string, content: Uint8Array) => uploadArtifact(daemon.url, runner, job.job_id, path, content);

function artifactFiles(): string[] {
  const dir = join(dataDir, "artifacts", job.build_id);
  return existsSync(dir) ? readdirSync(dir) : [];
}

beforeAll(async () => {
  mkdirSync(mountPoint);
  sh(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", mountPoint]);
  daemon = await startDaemon({ dataDir, cleanup: false });
  host = await startHostApiStandIn();
  host.github.repos.push({ id: 77, full_name: "acme/app", default_branch: "main", private: true });
  owner = await loginOwner(daemon.url);
  const ci = projectClient(daemon.url, owner, (await createGithubProject(daemon.url, owner, host)).id);
  await ci.queueBuild(await ci.createPipeline({ name: "release" }), "a".repeat(40));
  runner = await ci.registerRunner({ name: "linux-1" });
  const claimed = await claimJob(daemon.url, runner, {
    capabilities: { os: "linux", arch: "x64", flutter_versions: ["3.24.5"], xcode: null },
    version: "test",
  });
  job = { job_id: claimed.job_id, build_id: claimed.build.id };
}, 60_000);

afterAll(async () => {
  await daemon?.stop();
  await host?.stop();
  Bun.spawnSync(["umount", mountPoint]);
  rmSync(work, { recursive: true, force: true });
});

describe("a full data directory", () => {
  let first = "";

  test("with room to spare the daemon is ready and stores an artifact", async () => {
    const res = await http(daemon.url, "GET", "/readyz");
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("ready");
    const stored = await upload("build/mapping.txt", randomBytes(2000));
    expect(stored.status).toBe(201);
    first = stored.body.artifact.id;
    expect(artifactFiles()).toEqual([first]);
  });

  test("once the disk is full /readyz answers 503 not_ready with the reason", async () => {
    fillDisk();
    const res = await http(daemon.url, "GET", "/readyz");
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      code: "not_ready",
      message: "The data directory's disk is full: fewer than 209715 bytes are free. Free space there (docs/operations.md, Full disk).",
    });
  });

  test.each([
    ["a small", 2000],
    ["a large", 256 * 1024],
  ])("%s artifact upload answers 507 insufficient_storage and leaves no file and no row", async (_, size) => {
    const res = await upload("build/app-release.apk", randomBytes(size));
    expect(res.status).toBe(507);
    expect(res.body).toEqual(DISK_FULL);
    expect(artifactFiles()).toEqual([first]);
    const listed = (await http(daemon.url, "GET", `/v1/builds/${job.build_id}/artifacts`, { token: owner })).body.artifacts;
    expect(listed.map((a: { path: string }) => a.path)).toEqual(["build/mapping.txt"]);
  });

  test("a request that writes to the database answers 507 insufficient_storage, not 500", async () => {
    // Enough rows to outgrow whatever room the database's write-ahead log already had.
    const lines = Array.from({ length: 2000 }, (_, i) => ({ step: "build", stream: "stdout", text: `line ${i + 1} ${"x".repeat(200)}` }));
    const res = await http(daemon.url, "POST", `/v1/runners/${runner.id}/jobs/${job.job_id}/logs`, { token: runner.token, body: { first_line: 0, lines } });
    expect(res.status).toBe(507);
    expect(res.body).toEqual(DISK_FULL);
  });

  test("after the operator frees space, the daemon is ready again and the upload is stored whole", async () => {
    rmSync(fill);
    const deadline = Date.now() + 20_000;
    let ready = await http(daemon.url, "GET", "/readyz");
    while (ready.status !== 200 && Date.now() < deadline) {
      await Bun.sleep(250);
      ready = await http(daemon.url, "GET", "/readyz");
    }
    expect(ready.status).toBe(200);
    const content = randomBytes(256 * 1024);
    const res = await upload("build/app-release.apk", content);
    expect(res.status).toBe(201);
    expect(artifactFiles().sort()).toEqual([first, res.body.artifact.id].sort());
    expect(statSync(join(dataDir, "artifacts", job.build_id, res.body.artifact.id)).size).toBe(content.length);
  }, 30_000);
});
