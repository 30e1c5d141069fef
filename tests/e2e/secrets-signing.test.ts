// Secrets and Android signing through a real daemon and a real `roost runner` (docs/secrets.md,
// docs/signing.md): a secret reaches the build's commands and is masked in the log, plainly and
// base64-encoded; a file variable exists only while the job runs, 0600 in a 0700 directory; the
// runner writes android/key.properties from the signing variables and a standard
// `flutter build apk --release` (the stand-in, scripts/flutter-stand-in, which signs a JAR-shaped
// archive with the keystore key.properties names) produces an artifact `jarsigner -verify`
// accepts, signed by the test keystore's certificate.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { BUN, REPO_ROOT, ROOST, http, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";

const work = mkdtempSync(join(tmpdir(), "roost-secrets-signing-"));
const repo = join(work, "app");
const STORE_PASSWORD = "Keystore-Pa55-word";
const API_TOKEN = "api-token-0123456789";
let daemon: Daemon;
let host: HostApiStandIn;
let runner: Subprocess | null = null;
let owner = "";
let projectId = "";
let commit = "";

async function sh(cmd: string, cwd = work): Promise<string> {
  const p = Bun.spawn(["bash", "-c", cmd], { cwd, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${cmd}: ${err}`);
  return out.trim();
}

beforeAll(async () => {
  mkdirSync(join(repo, "android"), { recursive: true });
  writeFileSync(join(repo, "android", "build.gradle"), "// the app's Gradle file would read key.properties here\n");
  await sh("git init -q -b main && git add . && git -c user.email=ci@example.test -c user.name=CI commit -q -m 'app with android/'", repo);
  commit = await sh("git rev-parse HEAD", repo);
  await sh(
    `keytool -genkeypair -keystore ${join(work, "upload.p12")} -storetype PKCS12 -storepass ${STORE_PASSWORD} -keypass ${STORE_PASSWORD} -alias upload -keyalg RSA -keysize 2048 -validity 2 -dname "CN=Roost Signing Test, O=Roost"`,
  );
  daemon = await startDaemon({ dataDir: join(work, "data"), cleanup: false, env: { ROOST_RUNNER_HEARTBEAT_SECONDS: "1" } });
  host = await startHostApiStandIn();
  host.github.repos.push({ id: 91, full_name: "acme/signed", default_branch: "main", private: true, clone_url: repo });
  owner = (await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } })).body.session_token;
  await http(daemon.url, "POST", "/v1/integrations", {
    token: owner,
    body: {
      provider: "github",
      name: "gh",
      api_url: host.url,
      app_id: host.github.appId,
      installation_id: host.github.installationId,
      private_key: host.github.privateKeyPem,
      webhook_secret: "0123456789abcdef-secret",
    },
  });
  const repoId = (await http(daemon.url, "GET", "/v1/integration-repositories", { token: owner })).body.repositories[0].id;
  projectId = (await http(daemon.url, "POST", "/v1/projects", { token: owner, body: { repository_id: repoId } })).body.project.id;
  const created = (await http(daemon.url, "POST", "/v1/runners", { token: owner, body: { name: "signer" } })).body;
  runner = Bun.spawn([BUN, ROOST, "runner", "--unsafe-allow-same-user"], {
    cwd: REPO_ROOT,
    env: {
      PATH: `${join(REPO_ROOT, "scripts/flutter-stand-in")}:${process.env.PATH ?? "/usr/bin:/bin"}`,
      HOME: work,
      ROOST_URL: daemon.url,
      ROOST_RUNNER_ID: created.runner.id,
      ROOST_RUNNER_TOKEN: created.token,
      ROOST_RUNNER_WORKDIR: join(work, "runner-work"),
    },
    stdout: "ignore",
    stderr: "ignore",
  });
}, 60_000);

afterAll(async () => {
  runner?.kill("SIGKILL");
  await daemon?.stop();
  await host?.stop();
  rmSync(work, { recursive: true, force: true });
});

test("secrets reach the build masked, the keystore file lives only during the job, and the release APK is signed with it", async () => {
  const put = (key: string, body: Record<string, unknown>) => http(daemon.url, "PUT", `/v1/projects/${projectId}/variables/${key}`, { token: owner, body });
  expect((await put("ANDROID_KEYSTORE", { value: readFileSync(join(work, "upload.p12")).toString("base64"), secret: true, file: true })).status).toBe(200);
  await put("ANDROID_KEYSTORE_PASSWORD", { value: STORE_PASSWORD, secret: true });
  await put("ANDROID_KEY_ALIAS", { value: "upload" });
  await put("API_TOKEN", { value: API_TOKEN, secret: true });
  const pipeline = await http(daemon.url, "POST", `/v1/projects/${projectId}/pipelines`, {
    token: owner,
    body: {
      name: "android-release",
      execution_config: {
        platforms: ["android"],
        commands: {
          pre_build: [
            'echo "token: $API_TOKEN"',
            'printf %s "$API_TOKEN" | base64',
            'printf "x%s" "$API_TOKEN" | base64',
            'echo "keystore at $ANDROID_KEYSTORE"',
            'stat -c "mode %a" "$ANDROID_KEYSTORE" "$(dirname "$ANDROID_KEYSTORE")" android/key.properties',
            "grep -c '=' android/key.properties",
          ],
        },
      },
    },
  });
  expect(pipeline.status).toBe(201);
  const buildId = (
    await http(daemon.url, "POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.body.pipeline.id, commit_sha: commit } })
  ).body.build.id;
  let build: any;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await Bun.sleep(200)) {
    build = (await http(daemon.url, "GET", `/v1/builds/${buildId}`, { token: owner })).body.build;
    if (["succeeded", "failed", "canceled"].includes(build.status)) break;
  }
  const log = await fetch(`${daemon.url}/v1/builds/${buildId}/logs`, { headers: { authorization: `Bearer ${owner}`, accept: "text/plain" } }).then((r) =>
    r.text(),
  );
  expect({ status: build.status, failure: build.failure_reason }).toEqual({ status: "succeeded", failure: null });

  // Masked wherever it appears, plainly or base64-encoded at any offset.
  expect(log).toContain("token: ********");
  for (const form of [API_TOKEN, STORE_PASSWORD, Buffer.from(API_TOKEN).toString("base64"), Buffer.from(`x${API_TOKEN}`).toString("base64").slice(4, 24)])
    expect(log).not.toContain(form);
  expect(log).toContain("[roost] files written for this job (removed when it ends): ANDROID_KEYSTORE");
  expect(log).toContain("[roost] android/key.properties written for release signing (removed when the job ends)");
  expect(log).toContain("mode 600\nmode 700\nmode 600");
  expect(log).toContain("flutter stand-in: signed with the keystore android/key.properties names");

  // The keystore's file is gone once the build is over.
  const keystorePath = /keystore at (\/\S+)/.exec(log)![1]!;
  expect(keystorePath).toEndWith("/ANDROID_KEYSTORE");
  expect(keystorePath.startsWith(join(work, "runner-work"))).toBe(false);
  expect(existsSync(keystorePath)).toBe(false);
  expect(existsSync(join(keystorePath, ".."))).toBe(false);

  // The artifact is signed by the test keystore's certificate.
  const artifacts = (await http(daemon.url, "GET", `/v1/builds/${buildId}/artifacts`, { token: owner })).body.artifacts;
  expect(artifacts.map((a: any) => a.path)).toEqual(["build/app/outputs/flutter-apk/app-release.apk"]);
  const apk = await fetch(`${daemon.url}/v1/builds/${buildId}/artifacts/${artifacts[0].id}`, { headers: { authorization: `Bearer ${owner}` } }).then((r) =>
    r.arrayBuffer(),
  );
  writeFileSync(join(work, "downloaded.apk"), new Uint8Array(apk));
  const verified = await sh(`jarsigner -verify -verbose -certs ${join(work, "downloaded.apk")}`);
  expect(verified).toContain("jar verified.");
  expect(verified).toContain("CN=Roost Signing Test, O=Roost");
}, 90_000);
