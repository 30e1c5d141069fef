// The steps of a job, in the order run-job.ts runs them (docs/runners.md "What a job runs"):
//   checkout    the repository at the build's exact commit, from a per-runner mirror cache
//               (always on the runner's host, whatever its executor)
//   (flutter)   choosing the Flutter SDK (flutter.ts); reported as flutter_install only when it
//               installs one; a version it cannot have fails the next step
//   container   starting the build's container, on a container runner (startContainer)
//   pre_build   the pipeline's pre_build commands
//   build_<p>   per platform: `flutter build apk|appbundle|ipa|macos` + platform_build_args,
//               or the commands of platform_commands[p] when it lists any
//   build       the pipeline's build commands
//   post_build  the pipeline's post_build commands
// Artifacts and finishing are artifacts.ts and finish.ts.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { installCommands, isChannel, planSdk, requestedVersion, sdkUsed } from "./flutter.ts";
import { unixNow, type JobRun } from "./job-run.ts";

type Platform = "android" | "ios" | "macos";

/** A single-quoted shell word. */
const q = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

export async function checkout(run: JobRun): Promise<void> {
  const { workDir } = run.options;
  const build = run.job.build;
  const cache = join(workDir, "cache", createHash("sha256").update(build.clone_url).digest("hex").slice(0, 16));
  mkdirSync(join(workDir, "jobs"), { recursive: true });
  mkdirSync(join(workDir, "cache"), { recursive: true });
  // Credentials go in a per-command header, never into the cache's git config.
  const auth = run.basicAuth ? `-c http.extraHeader=${q(`Authorization: Basic ${run.basicAuth}`)} ` : "";
  const ws = q(run.workspace);
  await run.runStep(
    "checkout",
    [
      existsSync(cache)
        ? `git ${auth}-C ${q(cache)} fetch --prune --quiet origin '+refs/*:refs/*'`
        : `git ${auth}clone --mirror --quiet ${q(build.clone_url)} ${q(cache)}`,
      `git clone --quiet --no-checkout --shared ${q(cache)} ${ws}`,
      `git -C ${ws} -c advice.detachedHead=false checkout --quiet --detach ${q(build.commit_sha)} && git -C ${ws} log -1 --format='checked out %H (%s)'`,
    ],
    { cwd: workDir, onHost: true },
  );
}

/**
 * Chooses the build's Flutter SDK (flutter.ts), installing it as the reported step
 * flutter_install when the runner lacks it. A version it cannot have fails the build before any
 * command runs (the next step says why).
 */
export async function setUpFlutter(run: JobRun): Promise<void> {
  if (run.status !== "succeeded" || run.canceled) return;
  const { flutterSdks, flutterGitUrl } = run.options;
  const requested = requestedVersion(run.config.flutter_version, run.workspace);
  if ("error" in requested) {
    run.sdk = { path: null, flutter: "flutter", error: requested.error };
    return;
  }
  // In a container, a channel is the image's own flutter; a version is the runner's SDK, mounted.
  if (run.container && isChannel(requested.version)) {
    run.sdk = { path: null, flutter: "flutter", error: null };
    run.sdkUsed = sdkUsed(requested.version, null, "image");
    run.system("", `[roost] Flutter ${requested.version} (${requested.from}): the build image's flutter`);
    return;
  }
  let plan = planSdk(requested.version, flutterSdks, run.options.flutterGitUrlSet);
  if (plan.kind === "install") {
    run.system(
      "flutter_install",
      `[roost] Flutter ${requested.version} (${requested.from}) is not installed on this runner: installing it from ${flutterGitUrl.replace(/\/\/[^@/]*@/, "//")}`,
    );
    await run.runStep("flutter_install", installCommands(plan, flutterSdks, flutterGitUrl), { cwd: run.options.workDir, onHost: true });
    // (run.status is read again: runStep changed it.)
    if ((run.status as string) === "failed" && !run.timedOut)
      run.failureReason = `Flutter ${requested.version} could not be installed on this runner from ${flutterGitUrl.replace(/\/\/[^@/]*@/, "//")} (${run.failureReason})`;
    if (run.status !== "succeeded" || run.canceled) return;
    plan = { kind: "dir", dir: plan.dir, source: "reused" };
    run.sdkUsed = sdkUsed(requested.version, plan.dir, "installed");
  }
  if (plan.kind === "error") {
    run.sdk = { path: null, flutter: "flutter", error: plan.error };
    return;
  }
  if (plan.kind === "path") {
    run.sdk = { path: null, flutter: "flutter", error: null };
    run.sdkUsed = sdkUsed(requested.version, null, "path");
    run.system("", `[roost] Flutter ${requested.version} (${requested.from}): the flutter on PATH`);
    return;
  }
  run.sdk = { path: run.container ? run.container.useSdk(plan.dir) : join(plan.dir, "bin"), flutter: "flutter", error: null };
  run.sdkUsed ??= sdkUsed(requested.version, plan.dir, plan.source);
  run.system(
    "",
    `[roost] Flutter ${requested.version} (${requested.from}): ${plan.dir}${run.container ? ` (mounted in the build's container at ${run.container.inside(plan.dir)})` : ""}, ${run.sdkUsed.version} at ${run.sdkUsed.revision?.slice(0, 12) ?? "?"} (${run.sdkUsed.source})`,
  );
}

/**
 * Starts the build's container (executors/container.ts), as the reported step `container`: its
 * image pulled when the engine lacks it, its limits, network and file variables. A container that
 * cannot start fails the build with why. On the host executor, a pipeline's image, network or
 * limits are said not to apply.
 */
export async function startContainer(run: JobRun): Promise<void> {
  const cfg = run.config;
  if (!run.container) {
    const asked = [
      cfg.image ? `image ${cfg.image}` : null,
      cfg.network === "none" ? "network: none" : null,
      cfg.limits && Object.keys(cfg.limits).length ? "limits" : null,
      cfg.services.length ? "services" : null,
    ].filter(Boolean);
    if (asked.length) run.system("", `[roost] this runner runs builds on its own host (executor host): the pipeline's ${asked.join(", ")} do not apply here`);
    return;
  }
  if (run.status !== "succeeded" || run.canceled) return;
  const startedAt = unixNow();
  await run.api.reportStep(run.id, "container", { status: "running", started_at: startedAt });
  const t0 = performance.now();
  const error = await run.container.start({
    image: cfg.image ?? null,
    network: cfg.network ?? "default",
    limits: cfg.limits,
    services: cfg.services,
    registry: cfg.registry_credentials
      ? { key: cfg.registry_credentials, auth: run.job.registry_auth?.content ?? null, problem: run.job.registry_auth_problem }
      : null,
    files: run.job.files.map((f) => ({ key: f.key, content: Buffer.from(f.content_base64, "base64") })),
    say: (text) => run.system("container", text),
  });
  if (error) {
    run.system("container", `[roost] ${error}`);
    run.failAfterSteps(error);
  }
  await run.api.reportStep(run.id, "container", {
    status: error ? "failed" : "succeeded",
    exit_code: error ? 1 : 0,
    started_at: startedAt,
    finished_at: unixNow(),
    duration_ms: Math.round(performance.now() - t0),
  });
}

export async function preBuild(run: JobRun): Promise<void> {
  if (run.config.commands.pre_build.length) await run.runStep("pre_build", run.config.commands.pre_build, { needsFlutter: true });
}

export async function buildPlatform(run: JobRun, platform: Platform): Promise<void> {
  await run.runStep(`build_${platform}`, platformCommands(run, platform), { needsFlutter: true });
}

export async function build(run: JobRun): Promise<void> {
  if (run.config.commands.build.length) await run.runStep("build", run.config.commands.build, { needsFlutter: true });
}

export async function postBuild(run: JobRun): Promise<void> {
  if (run.config.commands.post_build.length) await run.runStep("post_build", run.config.commands.post_build, { needsFlutter: true });
}

/** The pipeline's own commands for the platform, or `flutter build <target>` with its arguments. */
export function platformCommands(run: Pick<JobRun, "config" | "sdk">, platform: Platform): string[] {
  const own = run.config.platform_commands[platform] ?? [];
  if (own.length > 0) return own;
  const args = run.config.platform_build_args[platform] ?? [];
  const target = platform === "android" ? (args[0] === "appbundle" ? "appbundle" : "apk") : platform === "ios" ? "ipa" : "macos";
  const rest = platform === "android" && args[0] === "appbundle" ? args.slice(1) : args;
  return [[run.sdk.flutter, "build", target, ...rest.map(q)].join(" ")];
}
