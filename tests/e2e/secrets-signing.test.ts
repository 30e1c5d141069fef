// Secrets and Android signing through a real daemon and a real `roost runner` (docs/secrets.md,
// docs/signing.md): a secret reaches the build's commands and is masked in the log, plainly and
// base64-encoded; a file variable exists only while the job runs, 0600 in a 0700 directory; the
// runner writes android/key.properties from the signing variables and a standard
// `flutter build apk --release` (the stand-in, scripts/flutter-stand-in, which signs a JAR-shaped
// archive with the keystore key.properties names) produces an artifact `jarsigner -verify`
// accepts, signed by the test keystore's certificate.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { http } from "../helpers/daemon.ts";
import { commitRepository, sh as shIn, startGithubProject, type GithubProject } from "../helpers/ci-daemon.ts";

const work = mkdtempSync(join(tmpdir(), "roost-secrets-signing-"));
const repo = join(work, "app");
const STORE_PASSWORD = "Keystore-Pa55-word";
const API_TOKEN = "api-token-0123456789";
let ci: GithubProject;
let commit = "";
const sh = (cmd: string) => shIn(cmd, work);

beforeAll(async () => {
  commit = await commitRepository(repo, { "android/build.gradle": "// the app's Gradle file would read key.properties here\n" }, "app with android/");
  await sh(
    `keytool -genkeypair -keystore ${join(work, "upload.p12")} -storetype PKCS12 -storepass ${STORE_PASSWORD} -keypass ${STORE_PASSWORD} -alias upload -keyalg RSA -keysize 2048 -validity 2 -dname "CN=Roost Signing Test, O=Roost"`,
  );
  ci = await startGithubProject({
    daemon: { dataDir: join(work, "data"), cleanup: false, env: { ROOST_RUNNER_HEARTBEAT_SECONDS: "1" } },
    repository: { id: 91, full_name: "acme/signed", clone_url: repo },
    runner: { name: "signer", home: work },
  });
}, 60_000);

afterAll(async () => {
  await ci?.stop();
  rmSync(work, { recursive: true, force: true });
});

test("secrets reach the build masked, the keystore file lives only during the job, and the release APK is signed with it", async () => {
  const put = (key: string, body: Record<string, unknown>) => http(ci.url, "PUT", `/v1/projects/${ci.projectId}/variables/${key}`, { token: ci.owner, body });
  expect((await put("ANDROID_KEYSTORE", { value: readFileSync(join(work, "upload.p12")).toString("base64"), secret: true, file: true })).status).toBe(200);
  await put("ANDROID_KEYSTORE_PASSWORD", { value: STORE_PASSWORD, secret: true });
  await put("ANDROID_KEY_ALIAS", { value: "upload" });
  await put("API_TOKEN", { value: API_TOKEN, secret: true });
  const pipeline = await http(ci.url, "POST", `/v1/projects/${ci.projectId}/pipelines`, {
    token: ci.owner,
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
  const buildId = await ci.queueBuild(pipeline.body.pipeline.id, commit);
  const build = await ci.waitForBuild(buildId, undefined, 60_000, 200);
  const log = await ci.buildLog(buildId);
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
  const artifacts = (await http(ci.url, "GET", `/v1/builds/${buildId}/artifacts`, { token: ci.owner })).body.artifacts;
  expect(artifacts.map((a: any) => a.path)).toEqual(["build/app/outputs/flutter-apk/app-release.apk"]);
  const apk = await fetch(`${ci.url}/v1/builds/${buildId}/artifacts/${artifacts[0].id}`, { headers: { authorization: `Bearer ${ci.owner}` } }).then((r) =>
    r.arrayBuffer(),
  );
  writeFileSync(join(work, "downloaded.apk"), new Uint8Array(apk));
  const verified = await sh(`jarsigner -verify -verbose -certs ${join(work, "downloaded.apk")}`);
  expect(verified).toContain("jar verified.");
  expect(verified).toContain("CN=Roost Signing Test, O=Roost");
}, 90_000);
