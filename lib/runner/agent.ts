// `roost runner`: connects, claims jobs by long poll, and runs each one (docs/runners.md):
//   checkout   the repository at the build's exact commit, from a per-runner mirror cache
//   pre_build  the pipeline's pre_build commands
//   build_<p>  per platform: `flutter build apk|appbundle|ipa|macos` + platform_build_args,
//              or the commands of platform_commands[p] when it lists any
//   build      the pipeline's build commands
//   post_build the pipeline's post_build commands
// Each step is reported; output is shipped line by line (secrets masked); the first failing
// step fails the build with its exit code and the rest are reported skipped. A cancel (seen in a
// heartbeat answer or an append's X-Roost-Job-Status) stops the running command's process tree.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { RunnerApi } from "./client.ts";
import { LogShipper } from "./shipper.ts";
import { maskLine, maskNeedles } from "./masking.ts";
import { runCommand, type RunningCommand } from "./process.ts";
import { SameUserRefusal, UNSAFE_FLAG, refusalMessage, sameUserProblem } from "./host-user.ts";

export interface RunnerOptions {
  url: string;
  runnerId: string;
  token: string;
  workDir: string;
  /** A directory of Flutter SDKs, one per version: <dir>/<version>/bin/flutter. */
  flutterSdks: string | undefined;
  labels: string[];
  /** TERM → KILL grace when a build is canceled. */
  graceMs: number;
  log: (msg: string, fields?: Record<string, unknown>) => void;
  stop: AbortSignal;
  /** Run build steps even as the daemon's user on its host (lib/runner/host-user.ts): tests and single-user trials only. */
  unsafeAllowSameUser?: boolean;
}

interface Step {
  name: string;
  commands: string[];
}

export async function runRunner(o: RunnerOptions): Promise<void> {
  const api = new RunnerApi(o.url, o.runnerId, o.token, o.stop);
  const connected = await api.call("POST", "/connect", { labels: o.labels, capabilities: capabilities(o), version: "roost-runner/0.1" });
  if (connected.status !== 200) throw new Error(`connect refused: ${connected.status} ${JSON.stringify(connected.body)}`);
  const heartbeatMs = Number(connected.body.heartbeat_seconds) * 1000;
  const problem = await sameUserProblem(o.url, connected.body.daemon_uid, process.getuid?.());
  if (problem && !o.unsafeAllowSameUser) throw new SameUserRefusal(refusalMessage(problem));
  const unsafe = problem ? `WARNING (${UNSAFE_FLAG}): ${problem}` : null;
  if (unsafe) o.log(unsafe, { level: "warn" });
  o.log("runner connected", { url: o.url, runner_id: o.runnerId });
  while (!o.stop.aborted) {
    let claim;
    try {
      claim = await api.call("POST", "/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 20 }, { timeoutMs: 40_000 });
    } catch {
      break; // stopping
    }
    if (claim.status === 201) await runJob(api, claim.body.job, o, heartbeatMs, unsafe);
    else if (claim.status === 401 || claim.status === 403) throw new Error(`the daemon refused this runner: ${claim.body?.code}`);
  }
}

function capabilities(o: RunnerOptions) {
  const os = process.platform === "darwin" ? "macos" : process.platform === "win32" ? "windows" : "linux";
  const versions = o.flutterSdks && existsSync(o.flutterSdks) ? readdirSync(o.flutterSdks).filter((v) => existsSync(join(o.flutterSdks!, v, "bin", "flutter"))) : [];
  return { os, arch: process.arch, flutter_versions: versions, xcode: os === "macos" ? "installed" : null };
}

async function runJob(api: RunnerApi, job: any, o: RunnerOptions, heartbeatMs: number, unsafe: string | null): Promise<void> {
  const build = job.build;
  const cfg = job.config.execution_config;
  let canceled = false;
  let current: RunningCommand | null = null;
  const cancel = () => {
    if (canceled) return;
    canceled = true;
    void current?.stop(o.graceMs);
  };
  const shipper = new LogShipper(api, job.job_id, (status) => status === "canceling" && cancel());
  const beat = setInterval(() => {
    void api.call("POST", "/heartbeat", { job_ids: [job.job_id] }).then((a) => {
      if (a.status === 200 && (a.body.cancel as string[]).includes(job.job_id)) cancel();
    }, () => {});
  }, heartbeatMs);

  const credentials = job.clone_credentials as { username: string; password: string } | null;
  const basic = credentials ? Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64") : null;
  const secrets = maskNeedles([...(cfg.env as { value: string; secret: boolean }[]).filter((e) => e.secret).map((e) => e.value), ...(credentials && basic ? [credentials.password, basic] : [])]);
  const system = (step: string, text: string) => shipper.add({ step, stream: "system", text });
  // Every build log of an unsafe runner says so, where the project's people will see it.
  if (unsafe) system("", `[roost] ${unsafe}`);
  const workspace = join(o.workDir, "jobs", job.job_id);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/tmp",
    LANG: process.env.LANG ?? "C.UTF-8",
    CI: "true",
    ROOST: "true",
    ROOST_BUILD_ID: build.id,
    ROOST_BUILD_NUMBER: String(build.build_number),
    ROOST_COMMIT_SHA: build.commit_sha,
    ROOST_BRANCH: build.branch,
    ROOST_PIPELINE: job.config.pipeline_name,
    ROOST_PROJECT_ID: build.project_id,
    ROOST_TRIGGER_EVENT: build.trigger_event,
    ROOST_WORKSPACE: workspace,
  };
  for (const e of cfg.env as { key: string; value: string }[]) env[e.key] = e.value;

  let status: "succeeded" | "failed" | "canceled" = "succeeded";
  let exitCode = 0;
  let failureReason: string | undefined;
  const sdk = flutterSdk(cfg.flutter_version, o.flutterSdks);
  const steps = plan(cfg, build, o, workspace, sdk.flutter, basic);
  for (const step of steps) {
    const startedAt = Math.floor(Date.now() / 1000);
    if (status !== "succeeded" || canceled) {
      await api.call("PUT", `/jobs/${job.job_id}/steps/${step.name}`, { status: canceled ? "canceled" : "skipped", started_at: startedAt, finished_at: startedAt });
      continue;
    }
    await api.call("PUT", `/jobs/${job.job_id}/steps/${step.name}`, { status: "running", started_at: startedAt });
    const t0 = performance.now();
    let stepExit = 0;
    if (step.name !== "checkout" && sdk.error) {
      system(step.name, `[roost] ${sdk.error}`);
      stepExit = 127;
      failureReason = sdk.error;
    } else {
      const stepEnv = sdk.path ? { ...env, PATH: `${sdk.path}:${env.PATH}` } : env;
      for (const command of step.commands) {
        system(step.name, `$ ${maskLine(command, secrets)}`);
        current = runCommand(command, { cwd: step.name === "checkout" ? o.workDir : workspace, env: stepEnv, onLine: (stream, text) => shipper.add({ step: step.name, stream, text: maskLine(text, secrets) }) });
        const result = await current.done;
        current = null;
        if (canceled) {
          stepExit = result.exitCode;
          break;
        }
        if (result.exitCode !== 0) {
          stepExit = result.exitCode;
          failureReason = `step ${step.name} failed with exit code ${result.exitCode}`;
          break;
        }
      }
    }
    const finishedAt = Math.floor(Date.now() / 1000);
    const stepStatus = canceled ? "canceled" : stepExit === 0 ? "succeeded" : "failed";
    if (canceled) status = "canceled";
    else if (stepExit !== 0) (status = "failed"), (exitCode = stepExit);
    if (canceled) exitCode = stepExit || 130;
    await api.call("PUT", `/jobs/${job.job_id}/steps/${step.name}`, { status: stepStatus, exit_code: stepExit, started_at: startedAt, finished_at: finishedAt, duration_ms: Math.round(performance.now() - t0) });
  }
  if (canceled) system("", "[roost] build canceled: the running command's process tree was stopped");
  else if (status === "succeeded") await uploadArtifacts(api, job.job_id, workspace, cfg.artifact_patterns as string[], system);

  // Finish only once the daemon has every line; a 409 log_incomplete means: resend, then again.
  await shipper.drain();
  for (let attempt = 0; attempt < 20; attempt++) {
    const done = await api.call("POST", `/jobs/${job.job_id}/finish`, { status, exit_code: exitCode, line_count: shipper.total, ...(failureReason ? { failure_reason: failureReason } : {}) });
    if (done.status !== 409) break;
    shipper.rewind(Number(done.headers.get("x-roost-log-next-line") ?? 0));
    await shipper.drain();
  }
  shipper.stop();
  clearInterval(beat);
  rmSync(workspace, { recursive: true, force: true });
  o.log("job done", { job_id: job.job_id, build_id: build.id, status, exit_code: exitCode });
}

/** Uploads the files matching artifact_patterns (relative to the checkout), each with its SHA-256. */
async function uploadArtifacts(api: RunnerApi, jobId: string, workspace: string, patterns: string[], system: (step: string, text: string) => void): Promise<void> {
  const seen = new Set<string>();
  for (const pattern of patterns) {
    for await (const path of new Bun.Glob(pattern).scan({ cwd: workspace, onlyFiles: true })) {
      if (seen.has(path)) continue;
      seen.add(path);
      const file = Bun.file(join(workspace, path));
      const sha = createHash("sha256").update(new Uint8Array(await file.arrayBuffer())).digest("hex");
      for (let attempt = 1; attempt <= 5; attempt++) {
        const res = await fetch(`${api.baseUrl}/v1/runners/${api.runnerId}/jobs/${jobId}/artifacts?path=${encodeURIComponent(path)}`, {
          method: "PUT",
          headers: { authorization: `Bearer ${api.token}`, "x-roost-artifact-sha256": sha, "content-type": "application/octet-stream" },
          body: file,
        }).catch(() => null);
        if (res && (res.status === 201 || res.status === 409)) {
          system("artifacts", `[roost] uploaded ${path} (${file.size} bytes, sha256 ${sha.slice(0, 12)}…)`);
          break;
        }
        if (res && res.status < 500) {
          system("artifacts", `[roost] artifact ${path} refused: ${res.status} ${await res.text()}`);
          break;
        }
        await Bun.sleep(500 * attempt);
      }
    }
  }
}

function plan(cfg: any, build: any, o: RunnerOptions, workspace: string, flutter: string, basicAuth: string | null): Step[] {
  const cache = join(o.workDir, "cache", createHash("sha256").update(build.clone_url).digest("hex").slice(0, 16));
  mkdirSync(join(o.workDir, "jobs"), { recursive: true });
  mkdirSync(join(o.workDir, "cache"), { recursive: true });
  const q = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
  // Credentials go in a per-command header, never into the cache's git config.
  const auth = basicAuth ? `-c http.extraHeader=${q(`Authorization: Basic ${basicAuth}`)} ` : "";
  const checkout = [
    existsSync(cache) ? `git ${auth}-C ${q(cache)} fetch --prune --quiet origin '+refs/*:refs/*'` : `git ${auth}clone --mirror --quiet ${q(build.clone_url)} ${q(cache)}`,
    `git clone --quiet --no-checkout --shared ${q(cache)} ${q(workspace)}`,
    `git -C ${q(workspace)} -c advice.detachedHead=false checkout --quiet --detach ${q(build.commit_sha)} && git -C ${q(workspace)} log -1 --format='checked out %H (%s)'`,
  ];
  const platformSteps: Step[] = (cfg.platforms as string[]).map((p) => {
    // A list since platform_commands became one; a daemon from before sends a single string.
    const own: string[] = [cfg.platform_commands?.[p] ?? []].flat();
    if (own.length > 0) return { name: `build_${p}`, commands: own };
    const args: string[] = cfg.platform_build_args?.[p] ?? [];
    const target = p === "android" ? (args[0] === "appbundle" ? "appbundle" : "apk") : p === "ios" ? "ipa" : "macos";
    const rest = p === "android" && args[0] === "appbundle" ? args.slice(1) : args;
    return { name: `build_${p}`, commands: [[flutter, "build", target, ...rest.map(q)].join(" ")] };
  });
  const steps: Step[] = [{ name: "checkout", commands: checkout }];
  if (cfg.commands.pre_build.length) steps.push({ name: "pre_build", commands: cfg.commands.pre_build });
  steps.push(...platformSteps);
  if (cfg.commands.build.length) steps.push({ name: "build", commands: cfg.commands.build });
  if (cfg.commands.post_build.length) steps.push({ name: "post_build", commands: cfg.commands.post_build });
  return steps;
}

/**
 * Which Flutter a build uses: a pinned X.Y.Z needs <ROOST_FLUTTER_SDKS>/<version>/bin/flutter;
 * `fvm` runs `fvm flutter` (fvm reads the repository's .fvmrc) and needs fvm on PATH; channel
 * names use the flutter on PATH. A missing SDK is a clear failure, before anything runs.
 */
export function flutterSdk(version: string, sdks: string | undefined, pathDirs: string[] = (process.env.PATH ?? "").split(":")): { path: string | null; flutter: string; error: string | null } {
  if (version === "fvm") {
    const fvm = pathDirs.some((d) => d && existsSync(join(d, "fvm")));
    return { path: null, flutter: "fvm flutter", error: fvm ? null : "flutter_version is fvm, but fvm is not installed on this runner (not on PATH)" };
  }
  if (!/^\d+\.\d+\.\d+/.test(version)) return { path: null, flutter: "flutter", error: null };
  const bin = sdks ? join(sdks, version, "bin") : null;
  if (bin && existsSync(join(bin, "flutter"))) return { path: bin, flutter: "flutter", error: null };
  return { path: null, flutter: "flutter", error: `Flutter ${version} is not installed on this runner (looked for ${bin ? join(bin, "flutter") : "ROOST_FLUTTER_SDKS/<version>/bin/flutter; ROOST_FLUTTER_SDKS is not set"})` };
}
