// An artifact upload cut short by a crash leaves its .partial file; the next start removes it
// once it is old enough to belong to no upload still running (lib/artifacts.ts).
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDaemon, type Daemon } from "../helpers/daemon.ts";

const dataDir = mkdtempSync(join(tmpdir(), "roost-abandoned-uploads-"));
let daemon: Daemon | undefined;
afterAll(async () => {
  await daemon?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

test("a start removes old .partial artifact files and keeps stored artifacts and young uploads", async () => {
  const dir = join(dataDir, "artifacts", "build1");
  mkdirSync(dir, { recursive: true });
  const twoDaysAgo = Date.now() / 1000 - 2 * 24 * 60 * 60;
  for (const name of ["crashed.partial", "stored", "running.partial"]) writeFileSync(join(dir, name), "bytes");
  utimesSync(join(dir, "crashed.partial"), twoDaysAgo, twoDaysAgo);
  utimesSync(join(dir, "stored"), twoDaysAgo, twoDaysAgo);
  daemon = await startDaemon({ dataDir, cleanup: false });
  expect(readdirSync(dir).sort()).toEqual(["running.partial", "stored"]);
  expect(daemon.logs.some((l) => l.msg === "removed artifact uploads a stopped daemon left unfinished" && l.files === 1)).toBe(true);
});
