// iOS/macOS code signing on a macOS runner (docs/signing.md "iOS and macOS"), the procedure
// GitHub documents for its macOS runners
// (https://docs.github.com/en/actions/use-cases-and-examples/deploying/installing-an-apple-certificate-on-macos-runners-for-xcode-development):
// a keychain created for this build only, in the job's private directory, with a random
// password; the certificate (.p12) imported into it; the keychain put first in the user's search
// list so codesign finds the identity; the provisioning profiles installed under their UUID.
// After the build, the search list is restored, the keychain deleted and the profiles removed,
// whether the build succeeded, failed or was canceled.
//
// Variables: IOS_CERTIFICATE_P12 (file), IOS_CERTIFICATE_PASSWORD, and one or more file variables
// whose key starts with IOS_PROVISIONING_PROFILE.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";

export const IOS_SIGNING_KEYS = {
  certificate: "IOS_CERTIFICATE_P12",
  password: "IOS_CERTIFICATE_PASSWORD",
  profilePrefix: "IOS_PROVISIONING_PROFILE",
} as const;

export interface IosSigningInputs {
  p12: string;
  p12Password: string;
  profiles: string[];
}

/** The signing inputs when the job has them: the .p12 path, its password and the profiles' paths. */
export function iosSigningInputs(env: Record<string, string>, fileKeys: string[]): IosSigningInputs | null {
  if (!fileKeys.includes(IOS_SIGNING_KEYS.certificate) || env[IOS_SIGNING_KEYS.password] === undefined) return null;
  const profiles = fileKeys
    .filter((k) => k.startsWith(IOS_SIGNING_KEYS.profilePrefix))
    .sort()
    .map((k) => env[k]!);
  return { p12: env[IOS_SIGNING_KEYS.certificate]!, p12Password: env[IOS_SIGNING_KEYS.password]!, profiles };
}

export interface KeychainSession {
  security: string;
  keychain: string;
  password: string;
  /** The user search list before the build, restored after it. */
  originalSearchList: string[];
  installedProfiles: string[];
}

export class SigningError extends Error {}

function run(security: string, args: string[], env: Record<string, string>): string {
  const r = spawnSync(security, args, { env, encoding: "utf8" });
  if (r.error) throw new SigningError(`${security} could not be run: ${r.error.message}`);
  if (r.status !== 0) throw new SigningError(`security ${args[0]} failed (exit ${r.status}): ${(r.stderr || r.stdout).trim().split("\n")[0] ?? ""}`);
  return r.stdout;
}

/** Where Xcode looks for installed profiles (one file per profile, named by its UUID). */
export function profilesDir(home: string): string {
  return join(home, "Library", "MobileDevice", "Provisioning Profiles");
}

/**
 * Creates and fills the build's keychain and installs the profiles. On a failure part-way, what
 * was set up is undone before the error is thrown.
 */
export function setUpKeychain(options: {
  security: string;
  dir: string;
  home: string;
  env: Record<string, string>;
  inputs: IosSigningInputs;
}): KeychainSession {
  const { security, env, inputs } = options;
  const session: KeychainSession = {
    security,
    keychain: join(options.dir, "roost-build.keychain-db"),
    password: randomBytes(24).toString("hex"),
    originalSearchList: [],
    installedProfiles: [],
  };
  session.originalSearchList = run(security, ["list-keychains", "-d", "user"], env)
    .split("\n")
    .map((l) => l.trim().replace(/^"|"$/g, ""))
    .filter(Boolean);
  let created = false;
  try {
    run(security, ["create-keychain", "-p", session.password, session.keychain], env);
    created = true;
    // Lock after 6 hours of inactivity, not on sleep: a long build must not find it locked.
    run(security, ["set-keychain-settings", "-lut", "21600", session.keychain], env);
    run(security, ["unlock-keychain", "-p", session.password, session.keychain], env);
    run(security, ["import", inputs.p12, "-P", inputs.p12Password, "-A", "-t", "cert", "-f", "pkcs12", "-k", session.keychain], env);
    // Lets codesign use the key without a prompt no one would answer.
    run(security, ["set-key-partition-list", "-S", "apple-tool:,apple:", "-k", session.password, session.keychain], env);
    run(security, ["list-keychains", "-d", "user", "-s", session.keychain, ...session.originalSearchList], env);
    const dir = profilesDir(options.home);
    for (const profile of inputs.profiles) {
      const plist = run(security, ["cms", "-D", "-i", profile], env);
      const uuid = /<key>UUID<\/key>\s*<string>([0-9A-Fa-f-]{36})<\/string>/.exec(plist)?.[1];
      if (!uuid) throw new SigningError("a provisioning profile has no UUID (is it a .mobileprovision / .provisionprofile file?)");
      mkdirSync(dir, { recursive: true });
      const target = join(dir, `${uuid}.mobileprovision`);
      copyFileSync(profile, target);
      session.installedProfiles.push(target);
    }
    return session;
  } catch (error) {
    if (created) tearDownKeychain(session, env);
    throw error;
  }
}

/** Restores the search list, deletes the keychain and removes the installed profiles; never throws. */
export function tearDownKeychain(session: KeychainSession, env: Record<string, string>): string[] {
  const problems: string[] = [];
  const attempt = (work: () => void) => {
    try {
      work();
    } catch (error) {
      problems.push((error as Error).message);
    }
  };
  attempt(() => run(session.security, ["list-keychains", "-d", "user", "-s", ...session.originalSearchList], env));
  attempt(() => run(session.security, ["delete-keychain", session.keychain], env));
  for (const profile of session.installedProfiles.splice(0)) attempt(() => rmSync(profile, { force: true }));
  return problems;
}
