// Android release signing (docs/signing.md "Android"). When a job has the keystore as a file
// variable ANDROID_KEYSTORE and the variables ANDROID_KEYSTORE_PASSWORD and ANDROID_KEY_ALIAS
// (ANDROID_KEY_PASSWORD defaults to the keystore's password), the runner writes
// android/key.properties in the form Flutter's deployment guide reads from
// android/app/build.gradle (https://docs.flutter.dev/deployment/android#reference-the-keystore-from-the-app),
// so `flutter build apk --release` / `flutter build appbundle` sign with it. The file is 0600 and
// removed with the job's secret files.
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { JobRun } from "./job-run.ts";

export const ANDROID_SIGNING_KEYS = {
  keystore: "ANDROID_KEYSTORE",
  storePassword: "ANDROID_KEYSTORE_PASSWORD",
  alias: "ANDROID_KEY_ALIAS",
  keyPassword: "ANDROID_KEY_PASSWORD",
} as const;

/** A value as java.util.Properties reads it back unchanged. */
export function propertiesValue(value: string): string {
  return value
    .replace(/\\/g, "\\\\")
    .replace(/\n/g, "\\n")
    .replace(/\r/g, "\\r")
    .replace(/\t/g, "\\t")
    .replace(/^ /, "\\ ")
    .replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

export function keyProperties(values: { storeFile: string; storePassword: string; keyAlias: string; keyPassword: string }): string {
  return (["storePassword", "keyPassword", "keyAlias", "storeFile"] as const).map((k) => `${k}=${propertiesValue(values[k])}`).join("\n") + "\n";
}

/** Writes android/key.properties when the job carries the signing variables and the repository has an android/ directory. */
export function writeKeyProperties(run: JobRun): void {
  const env = run.env;
  const storeFile = run.job.files.some((f) => f.key === ANDROID_SIGNING_KEYS.keystore) ? env[ANDROID_SIGNING_KEYS.keystore] : undefined;
  const storePassword = env[ANDROID_SIGNING_KEYS.storePassword];
  const keyAlias = env[ANDROID_SIGNING_KEYS.alias];
  if (!storeFile || storePassword === undefined || keyAlias === undefined) return;
  const android = join(run.workspace, "android");
  if (!existsSync(android)) {
    run.system("", "[roost] Android signing variables are set, but the repository has no android/ directory: key.properties not written");
    return;
  }
  const path = join(android, "key.properties");
  const replaced = existsSync(path);
  rmSync(path, { force: true });
  writeFileSync(path, keyProperties({ storeFile, storePassword, keyAlias, keyPassword: env[ANDROID_SIGNING_KEYS.keyPassword] ?? storePassword }), {
    mode: 0o600,
    flag: "wx",
  });
  run.cleanupPaths.push(path);
  run.system("", `[roost] android/key.properties ${replaced ? "replaced" : "written"} for release signing (removed when the job ends)`);
}
