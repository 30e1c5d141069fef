// The single compiled binary (docs/operations.md "The binary"): built with `bun build --compile`, copied
// alone to an empty directory, and run where node_modules cannot be seen: a private mount
// namespace hides this checkout's node_modules behind an empty tmpfs, so everything it runs,
// the database included (Bun's built-in SQLite, no native addon, no build plugin), comes from
// inside the executable.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { buildBinary } from "../../scripts/build.ts";
import { REPO_ROOT, http } from "../helpers/daemon.ts";
import { githubIntegration } from "../helpers/ci-daemon.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";

const work = mkdtempSync(join(tmpdir(), "roost-binary-"));
const lonely = mkdtempSync(join(tmpdir(), "roost-binary-alone-"));
let proc: Subprocess | undefined;
let url = "";
let host: HostApiStandIn;

beforeAll(async () => {
  host = await startHostApiStandIn();
  host.github.repos.push({ id: 7, full_name: "acme/app", default_branch: "main", private: true });
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
  await host?.stop();
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

  test("serves the web app from inside itself: / and a deep link answer the app, its script is served", async () => {
    const page = await fetch(`${url}/projects/p/builds/b`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const html = await page.text();
    const src = /<script type="module" src="(\/assets\/[^"]+\.js)"><\/script>/.exec(html)?.[1];
    expect(src).toBeDefined();
    const js = await fetch(url + src);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect((await js.text()).length).toBeGreaterThan(10_000);
  });

  test("completes first-run setup, creates an API token, and creates a build", async () => {
    const login = await http(url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } });
    expect(login.status).toBe(200);
    expect(login.body.user.role).toBe("owner");
    const created = await http(url, "POST", "/v1/api-tokens", { token: login.body.session_token, body: { name: "smoke", role: "owner" } });
    expect(created.status).toBe(201);
    const token = created.body.token;
    const me = await http(url, "GET", "/v1/users/me", { token });
    expect(me.body.user.email).toBe("owner@example.test");

    // The GitHub App JWT is signed inside the binary (jose) and the catalogue synced from the host API stand-in.
    const integration = await http(url, "POST", "/v1/integrations", { token, body: githubIntegration(host) });
    expect(integration.body.repositories_synced).toBe(1);
    const repo = (await http(url, "GET", "/v1/integration-repositories", { token })).body.repositories[0];
    const project = (await http(url, "POST", "/v1/projects", { token, body: { repository_id: repo.id } })).body.project;
    const pipeline = (await http(url, "POST", `/v1/projects/${project.id}/pipelines`, { token, body: { name: "Android" } })).body.pipeline;
    const build = await http(url, "POST", `/v1/projects/${project.id}/builds`, { token, body: { pipeline_id: pipeline.id, commit_sha: "c".repeat(40) } });
    expect(build.status).toBe(201);
    expect(build.body.build).toMatchObject({ build_number: 1, status: "queued", commit_sha: "c".repeat(40) });
  });
});
