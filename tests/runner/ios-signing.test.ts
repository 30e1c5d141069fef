// iOS/macOS signing's keychain sequence (runner/job/ios-signing.ts, docs/signing.md), run on
// Linux against tests/support/security-stand-in/security, a recording STAND-IN for macOS's
// `security`: the exact commands in order, the profile installed under its UUID for the build
// only, the user's search list restored and the keychain deleted afterwards, and a failed import
// undoing what was set up.
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { iosSigningInputs, profilesDir, setUpKeychain, SigningError, tearDownKeychain } from "../../runner/job/ios-signing.ts";

const SECURITY = resolve(import.meta.dir, "../support/security-stand-in/security");
const UUID = "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0";
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function fixture(env: Record<string, string> = {}) {
  const root = mkdtempSync(join(tmpdir(), "roost-ios-signing-"));
  dirs.push(root);
  const files = join(root, "files");
  const state = join(root, "state");
  const home = join(root, "home");
  for (const d of [files, state, home]) mkdirSync(d, { mode: 0o700 });
  writeFileSync(join(files, "IOS_CERTIFICATE_P12"), "p12 bytes", { mode: 0o600 });
  writeFileSync(
    join(files, "IOS_PROVISIONING_PROFILE"),
    `<?xml version="1.0"?><plist><dict><key>Name</key><string>App Store</string><key>UUID</key><string>${UUID}</string></dict></plist>`,
    { mode: 0o600 },
  );
  const log = join(root, "security.log");
  const jobEnv = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    SECURITY_STAND_IN_LOG: log,
    SECURITY_STAND_IN_STATE: state,
    IOS_CERTIFICATE_P12: join(files, "IOS_CERTIFICATE_P12"),
    IOS_CERTIFICATE_PASSWORD: "p12-password",
    IOS_PROVISIONING_PROFILE: join(files, "IOS_PROVISIONING_PROFILE"),
    ...env,
  };
  const inputs = iosSigningInputs(jobEnv, ["IOS_CERTIFICATE_P12", "IOS_PROVISIONING_PROFILE"])!;
  return { files, state, home, log, env: jobEnv, inputs, calls: () => readFileSync(log, "utf8").trimEnd().split("\n") };
}

test("the keychain is created, filled, searched first and removed after the build, in the documented order", () => {
  const f = fixture();
  const session = setUpKeychain({ security: SECURITY, dir: f.files, home: f.home, env: f.env, inputs: f.inputs });
  const kc = join(f.files, "roost-build.keychain-db");
  const login = join(f.state, "login.keychain-db");
  const pw = session.password;
  expect(pw).toMatch(/^[0-9a-f]{48}$/);
  expect(f.calls()).toEqual([
    "list-keychains -d user",
    `create-keychain -p ${pw} ${kc}`,
    `set-keychain-settings -lut 21600 ${kc}`,
    `unlock-keychain -p ${pw} ${kc}`,
    `import ${f.inputs.p12} -P p12-password -A -t cert -f pkcs12 -k ${kc}`,
    `set-key-partition-list -S apple-tool:,apple: -k ${pw} ${kc}`,
    `list-keychains -d user -s ${kc} ${login}`,
    `cms -D -i ${f.inputs.profiles[0]}`,
  ]);
  const installed = join(profilesDir(f.home), `${UUID}.mobileprovision`);
  expect(existsSync(kc)).toBe(true);
  expect(readFileSync(installed, "utf8")).toContain(UUID);
  expect(statSync(installed).mode & 0o777).toBe(0o600);
  expect(readFileSync(join(f.state, "search-list"), "utf8")).toBe(`${kc}\n${login}\n`);

  expect(tearDownKeychain(session, f.env)).toEqual([]);
  expect(f.calls().slice(8)).toEqual([`list-keychains -d user -s ${login}`, `delete-keychain ${kc}`]);
  expect(existsSync(kc)).toBe(false);
  expect(existsSync(installed)).toBe(false);
  expect(readFileSync(join(f.state, "search-list"), "utf8")).toBe(`${login}\n`);
});

test("a .p12 that does not import fails with security's reason, and the half-made keychain is deleted", () => {
  const f = fixture({ SECURITY_STAND_IN_FAIL_IMPORT: "1" });
  let error: unknown;
  try {
    setUpKeychain({ security: SECURITY, dir: f.files, home: f.home, env: f.env, inputs: f.inputs });
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(SigningError);
  expect((error as Error).message).toBe(
    "security import failed (exit 1): security: SecKeychainItemImport: MAC verification failed during PKCS12 import (wrong password?)",
  );
  const kc = join(f.files, "roost-build.keychain-db");
  expect(f.calls().slice(-2)).toEqual([`list-keychains -d user -s ${join(f.state, "login.keychain-db")}`, `delete-keychain ${kc}`]);
  expect(existsSync(kc)).toBe(false);
  expect(existsSync(profilesDir(f.home))).toBe(false);
});

test("signing is set up only with a certificate and its password", () => {
  expect(iosSigningInputs({ IOS_CERTIFICATE_P12: "/x" }, ["IOS_CERTIFICATE_P12"])).toBeNull();
  expect(iosSigningInputs({ IOS_CERTIFICATE_PASSWORD: "p" }, [])).toBeNull();
  expect(
    iosSigningInputs({ IOS_CERTIFICATE_P12: "/c", IOS_CERTIFICATE_PASSWORD: "p", IOS_PROVISIONING_PROFILE_B: "/b", IOS_PROVISIONING_PROFILE: "/a" }, [
      "IOS_PROVISIONING_PROFILE_B",
      "IOS_CERTIFICATE_P12",
      "IOS_PROVISIONING_PROFILE",
    ]),
  ).toEqual({
    p12: "/c",
    p12Password: "p",
    profiles: ["/a", "/b"],
  });
});
