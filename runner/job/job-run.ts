// One claimed job while it runs: its log shipper, its environment, the command running now, and
// the outcome so far. The steps (steps.ts) run commands through `runStep`; the first failing
// step fails the build with its exit code and every later step is reported skipped. A cancel
// (heartbeat answer, an append's X-Roost-Job-Status, or the runner stopping) stops the running
// command's process tree and reports the rest canceled.
import { join } from "node:path";
import type { ClaimedJob } from "../../lib/runners/protocol-wire.ts";
import type { RunnerApi } from "../client.ts";
import type { RunnerOptions } from "../agent.ts";
import { LogShipper } from "../shipper.ts";
import { maskLine, maskNeedles } from "../masking.ts";
import { proxyPasswords } from "../host-env.ts";
import { runCommand, type RunningCommand } from "../process.ts";
import { HostExecutor, type Executor } from "../executors/executor.ts";
import { ContainerExecutor } from "../executors/container.ts";
import { cacheHomes } from "./cache.ts";
import { formatTimeout } from "../../lib/pipelines/config.ts";
import type { FlutterSdk } from "./flutter.ts";
import type { FlutterSdkUsed } from "../../lib/runners/protocol-wire.ts";
import type { KeychainSession } from "./ios-signing.ts";
import { MachineOutput } from "./machine-output.ts";

export type JobStatus = "succeeded" | "failed" | "canceled";

/** TERM → KILL grace when the runner itself is stopping: it must be gone within a second or two. */
const STOPPING_GRACE_MS = 1000;

export class JobRun {
  readonly id: string;
  readonly workspace: string;
  readonly shipper: LogShipper;
  readonly secrets: string[];
  readonly basicAuth: string | null;
  readonly env: Record<string, string>;
  /** Where the build's commands run (runner/executors/): on this host, or in the build's container. */
  readonly executor: Executor;
  status: JobStatus = "succeeded";
  exitCode = 0;
  failureReason: string | undefined;
  canceled = false;
  /** Set when the runner's own stop canceled the job (not a user's cancel). */
  stoppedByRunner = false;
  sdk: FlutterSdk = { path: null, flutter: "flutter", error: null };
  /** The build's cache key (cache.ts) once computed, and whether an entry had exactly it. */
  cacheKey: string | null = null;
  cacheHit = false;
  /** The SDK the build used, reported with its finish; null until chosen. */
  sdkUsed: FlutterSdkUsed | null = null;
  /** The private directory of this job's file variables (secret-files.ts), while they exist. */
  secretDir: string | null = null;
  /** Other files holding secrets (android/key.properties), removed with the secret files. */
  cleanupPaths: string[] = [];
  /** The build's temporary keychain on macOS (ios-signing.ts), while it exists. */
  keychain: KeychainSession | null = null;
  /** Test results commands printed on standard output (machine-output.ts), sent with the test reports. */
  readonly printedReports: { step: string; bytes: Uint8Array; cut: boolean }[] = [];
  /** Set ("timeout: …") when the build or a step ran past its timeout: the build fails with it. */
  timedOut: string | null = null;
  #current: RunningCommand | null = null;
  /** Every command this job ran, by step: their process groups are stopped when the job ends. */
  readonly #started: { step: string; command: RunningCommand }[] = [];

  constructor(
    readonly api: RunnerApi,
    readonly job: ClaimedJob,
    readonly options: RunnerOptions,
  ) {
    this.id = job.job_id;
    this.workspace = join(options.workDir, "jobs", job.job_id);
    this.shipper = new LogShipper(api, job.job_id, (status) => status === "canceling" && this.cancel());
    const credentials = job.clone_credentials;
    this.basicAuth = credentials ? Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64") : null;
    const cfg = job.config.execution_config;
    this.secrets = maskNeedles(
      [
        ...cfg.env.filter((e) => e.secret).map((e) => e.value),
        ...(credentials && this.basicAuth ? [credentials.password, this.basicAuth] : []),
        ...proxyPasswords(options.stepEnv),
        ...registryAuthSecrets(job.registry_auth?.content ?? null),
      ],
      job.files.filter((f) => f.secret).map((f) => Buffer.from(f.content_base64, "base64")),
    );
    const settings = options.executor ?? { kind: "host" };
    this.executor =
      settings.kind === "container"
        ? new ContainerExecutor(
            settings,
            { jobId: job.job_id, runnerId: options.runnerId, buildId: job.build.id, timeoutSeconds: this.config.timeout_seconds },
            this.workspace,
            cacheHomes({ options, id: job.job_id }),
            join(options.workDir, "overlays", job.job_id),
          )
        : new HostExecutor();
    this.env = jobEnv(job, this.executor.inside(this.workspace), this.executor.stepEnv(options.stepEnv));
  }

  /** The build's container, when it runs in one. */
  get container(): ContainerExecutor | null {
    return this.executor instanceof ContainerExecutor ? this.executor : null;
  }

  get config(): ClaimedJob["config"]["execution_config"] {
    return this.job.config.execution_config;
  }

  system(step: string, text: string): void {
    this.shipper.add({ step, stream: "system", text });
  }

  cancel(graceMs = this.options.graceMs): void {
    // A build that timed out is already being stopped, and ends failed (timeout), not canceled.
    if (this.canceled || this.timedOut) return;
    this.canceled = true;
    void this.#current?.stop(graceMs);
  }

  /** The runner is stopping: the job is canceled at once, with a short grace for its commands. */
  stopForRunner(): void {
    this.stoppedByRunner = true;
    this.cancel(Math.min(this.options.graceMs, STOPPING_GRACE_MS));
  }

  /**
   * The build or a step ran past its timeout (docs/runners.md "Timeouts"): stopped like a cancel
   * (the running command's process tree gets TERM, then KILL after the grace period), but the
   * build fails with reason timeout and exit code 124, as coreutils timeout(1) exits.
   */
  timeOut(what: string): void {
    this.stopFailing(`timeout: ${what}`, 124);
  }

  /** The build is stopped like a timeout, failing with `reason` (a limit it went past). */
  stopFailing(reason: string, exitCode: number): void {
    if (this.timedOut || this.canceled || this.status !== "succeeded") return;
    this.timedOut = reason;
    this.status = "failed";
    this.exitCode = exitCode;
    this.failureReason = this.timedOut;
    this.system("", `[roost] ${this.timedOut}; stopping the running command's process tree`);
    void this.#current?.stop(this.options.graceMs);
  }

  /**
   * The job is ending: process groups its commands left running (`sleep 3600 &`, an emulator, a
   * mock server) get TERM, then KILL after the grace period; the log says which step left them.
   */
  async stopLeftovers(): Promise<void> {
    const alive = new Set(await this.executor.alive(this.#started.map((s) => s.command)));
    const left = this.#started.filter((s) => alive.has(s.command));
    if (left.length === 0) return;
    const steps = [...new Set(left.map((s) => s.step))].join(", ");
    this.system(
      "",
      `[roost] stopping processes left running by step ${steps} (process group${left.length > 1 ? "s" : ""} ${left.map((s) => s.command.pid).join(", ")}): the job is over`,
    );
    await Promise.all(left.map((s) => s.command.stop(this.stoppedByRunner ? Math.min(this.options.graceMs, STOPPING_GRACE_MS) : this.options.graceMs)));
  }

  /** Runs one reported step: skipped or canceled when the build is already over, else its commands in order. */
  async runStep(name: string, commands: string[], options: { cwd?: string; needsFlutter?: boolean; onHost?: boolean } = {}): Promise<void> {
    const startedAt = unixNow();
    if (this.status !== "succeeded" || this.canceled) {
      await this.api.reportStep(this.id, name, { status: this.canceled ? "canceled" : "skipped", started_at: startedAt, finished_at: startedAt });
      return;
    }
    await this.api.reportStep(this.id, name, { status: "running", started_at: startedAt });
    const t0 = performance.now();
    const limit = (this.config.step_timeout_seconds as Record<string, number | undefined>)[name];
    const timer = limit ? setTimeout(() => this.timeOut(`step ${name} ran past its timeout of ${formatTimeout(limit)}`), limit * 1000) : null;
    const stepExit =
      options.needsFlutter && this.sdk.error
        ? this.#flutterMissing(name)
        : await this.#commands(name, commands, options.cwd ?? this.workspace, options.onHost === true);
    // A process the kernel killed for the container's memory limit fails the build with that said.
    const outOfMemory = stepExit !== 0 && !options.onHost && !this.canceled ? await this.executor.outOfMemory() : null;
    if (outOfMemory && !this.timedOut) {
      this.system(name, `[roost] ${outOfMemory}: the kernel killed a process of step ${name}`);
      this.failureReason = outOfMemory;
    }
    if (timer) clearTimeout(timer);
    if (this.timedOut) {
      // timeOut() set the build's outcome; the step that was stopped failed.
    } else if (this.canceled) {
      this.status = "canceled";
      this.exitCode = stepExit || 130;
    } else if (stepExit !== 0) {
      this.status = "failed";
      this.exitCode = stepExit;
      this.failureReason ??= `step ${name} failed with exit code ${stepExit}`;
    }
    const stepStatus = this.canceled ? "canceled" : stepExit === 0 && !this.timedOut ? "succeeded" : "failed";
    await this.api.reportStep(this.id, name, {
      status: stepStatus,
      exit_code: stepExit,
      started_at: startedAt,
      finished_at: unixNow(),
      duration_ms: Math.round(performance.now() - t0),
    });
  }

  /** The build fails after its steps (e.g. an artifact refused): the outcome the job finishes with. */
  failAfterSteps(reason: string): void {
    if (this.status !== "succeeded") return;
    this.status = "failed";
    this.exitCode = 1;
    this.failureReason = reason;
  }

  #flutterMissing(step: string): number {
    this.system(step, `[roost] ${this.sdk.error}`);
    this.failureReason = this.sdk.error!;
    return 127;
  }

  /**
   * A step's commands, in order, until one fails. `onHost`: on the runner's own host whatever the
   * executor (the checkout and a Flutter install: git with the clone credentials, which never
   * enter a build's container), with the runner's step variables only when the build runs in a
   * container.
   */
  async #commands(step: string, commands: string[], cwd: string, onHost: boolean): Promise<number> {
    const base = onHost && this.container ? { ...this.options.stepEnv } : this.env;
    const path = base.PATH ?? this.executor.basePath();
    const env = this.sdk.path && !onHost ? { ...base, PATH: path ? `${this.sdk.path}:${path}` : this.sdk.path } : base;
    for (const command of commands) {
      this.system(step, `$ ${maskLine(command, this.secrets)}`);
      const printed = new MachineOutput();
      const onLine = (stream: "stdout" | "stderr", text: string) => {
        const masked = maskLine(text, this.secrets);
        this.shipper.add({ step, stream, text: masked });
        if (stream === "stdout" && !onHost) printed.stdout(masked);
      };
      this.#current = onHost ? runCommand(command, { cwd, env, onLine }) : this.executor.run(command, { cwd: this.executor.inside(cwd), env, onLine });
      this.#started.push({ step, command: this.#current });
      const result = await this.#current.done;
      this.#current = null;
      const report = printed.report();
      if (report) this.printedReports.push({ step, bytes: report, cut: printed.cut });
      if (this.canceled || this.timedOut || result.exitCode !== 0) return result.exitCode;
    }
    return 0;
  }
}

/** The runner's passed variables, then Roost's, then the pipeline's env (docs/runners.md "The build's environment"). */
function jobEnv(job: ClaimedJob, workspace: string, stepEnv: Record<string, string>): Record<string, string> {
  const build = job.build;
  const env: Record<string, string> = {
    ...stepEnv,
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
  for (const e of job.config.execution_config.env) env[e.key] = e.value;
  return env;
}

export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}

/** The pieces of a registry auth file an engine's message could echo: the file, each `auth` (base64 of user:password), and each password. */
function registryAuthSecrets(content: string | null): string[] {
  if (!content) return [];
  const out = [content];
  try {
    const auths = (JSON.parse(content) as { auths?: Record<string, { auth?: string; password?: string; identitytoken?: string }> }).auths ?? {};
    for (const entry of Object.values(auths)) {
      if (entry?.auth) {
        const decoded = Buffer.from(entry.auth, "base64").toString("utf8");
        out.push(entry.auth, decoded, decoded.slice(decoded.indexOf(":") + 1));
      }
      if (entry?.password) out.push(entry.password);
      if (entry?.identitytoken) out.push(entry.identitytoken);
    }
  } catch {}
  return out;
}
