// The single compiled binary (issue 7 "The binary"): built with `bun build --compile`, copied
// alone to an empty directory, and run where node_modules cannot be seen: a private mount
// namespace hides this checkout's node_modules behind an empty tmpfs, so the libSQL native addon
// can only come from inside the executable.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { buildBinary } from "../../scripts/build.ts";
import { REPO_ROOT, http } from "../helpers/daemon.ts";

const work = mkdtempSync(join(tmpdir(), "roost-binary-"));
const lonely = mkdtempSync(join(tmpdir(), "roost-binary-alone-"));
let proc: Subprocess | undefined;
let url = "";

beforeAll(async () => {
  const built = await buildBinary({ outfile: join(work, "roost") });
  copyFileSync(built, join(lonely, "roost"));
  const script = `mount -t tmpfs none '${REPO_ROOT}/node_modules' && cd '${lonely}' && exec ./roost serve`;
  proc = Bun.spawn(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], {
    env: { PATH: process.env.PATH ?? "", ROOST_LISTEN: "127.0.0.1:0" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) {
    buffer += decoder.decode(chunk);
    const line = buffer.split("\n").find((l) => l.includes('"roost listening"'));
    if (line) {
      url = JSON.parse(line).url;
      break;
    }
  }
  if (!url) throw new Error(`the binary did not start: ${buffer}`);
}, 120_000);

afterAll(async () => {
  proc?.kill("SIGTERM");
  await proc?.exited;
  rmSync(work, { recursive: true, force: true });
  rmSync(lonely, { recursive: true, force: true });
});

describe("the compiled roost binary, alone in an empty directory", () => {
  test("creates its data dir beside it and serves the API document", async () => {
    expect(statSync(join(lonely, "data", "roost.db")).isFile()).toBe(true);
    const doc = await http(url, "GET", "/v1/openapi.json");
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe("3.1.0");
  });

  test("completes first-run setup and creates an API token that works", async () => {
    const login = await http(url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } });
    expect(login.status).toBe(200);
    expect(login.body.user.role).toBe("owner");
    const created = await http(url, "POST", "/v1/api-tokens", { token: login.body.session_token, body: { name: "smoke", role: "owner" } });
    expect(created.status).toBe(201);
    const me = await http(url, "GET", "/v1/users/me", { token: created.body.token });
    expect(me.body.user.email).toBe("owner@example.test");
  });
});
