// Which of the runner's own environment variables reach build steps (docs/runners.md "The build's
// environment"). A step does not inherit the runner's whole environment: that holds the runner's
// token and whatever else the host's service manager put there. It gets PATH, HOME and LANG, the
// variables a Flutter toolchain on a runner host is configured with (below) when they are set,
// and the names the operator adds with `--env NAME` or ROOST_RUNNER_ENV.

/**
 * Passed when set on the runner host: where the Android SDK, NDK and JDK are (Gradle and
 * `flutter doctor` read these), pub and Flutter mirrors, proxies (curl and git read the lower-case
 * forms, Java and Gradle tooling often the upper-case ones), CA bundles that go with a proxy, the
 * locale, the temporary directory, the selected Xcode, and the user's name (CocoaPods and Xcode
 * tools read it). GRADLE_USER_HOME and PUB_CACHE count too, except while the dependency cache
 * points them at the job's own directories (runner/job/cache.ts).
 */
export const DEFAULT_PASSED_ENV = [
  "ANDROID_HOME",
  "ANDROID_SDK_ROOT",
  "ANDROID_NDK_HOME",
  "ANDROID_NDK_ROOT",
  "JAVA_HOME",
  "GRADLE_USER_HOME",
  "GRADLE_OPTS",
  "PUB_CACHE",
  "PUB_HOSTED_URL",
  "FLUTTER_STORAGE_BASE_URL",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "all_proxy",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "ALL_PROXY",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "LC_ALL",
  "TMPDIR",
  "DEVELOPER_DIR",
  "USER",
  "LOGNAME",
] as const;

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** A sentence saying why `name` cannot be passed to build steps, or null when it can. */
export function passedEnvProblem(name: string): string | null {
  if (!NAME.test(name)) return `cannot pass ${JSON.stringify(name)} to build steps (--env, ROOST_RUNNER_ENV): not a variable name (letters, digits, _)`;
  // The runner's own settings, its token above all, never reach build code; the job's ROOST_ variables are the runner's to set.
  if (name.startsWith("ROOST_"))
    return `cannot pass ${name} to build steps (--env, ROOST_RUNNER_ENV): ROOST_ variables are the runner's own, its token among them`;
  return null;
}

/** The names passed: the defaults and the operator's, without repeats. */
export function passedEnvNames(extra: string[]): string[] {
  return [...new Set([...DEFAULT_PASSED_ENV, ...extra])];
}

/** The values of those names that are set in `env`. */
export function pickPassedEnv(env: Record<string, string | undefined>, names: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && !name.startsWith("ROOST_")) out[name] = value;
  }
  return out;
}

/** Passwords in proxy URLs (http://user:password@proxy:3128): masked in build logs like secrets. */
export function proxyPasswords(env: Record<string, string>): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!/_proxy$/i.test(name)) continue;
    try {
      const password = decodeURIComponent(new URL(value).password);
      if (password) out.push(password);
    } catch {
      // not a URL (no_proxy's list of hosts)
    }
  }
  return out;
}
