// The runner's loop (docs/runners.md): connect, then claim jobs by long poll and run each one
// (job/run-job.ts) until told to stop. Stopping (SIGTERM/SIGINT) ends a waiting claim at once;
// a job the daemon handed out meanwhile is handed back, a running job is canceled and finished.
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { RunnerApi, Stopping, backoffMs, sleepUnless, type Log } from "./client.ts";
import { SameUserRefusal, UNSAFE_FLAG, refusalMessage, sameUserProblem } from "./host-user.ts";
import { releaseJob, runJob } from "./job/run-job.ts";
import { runPublish } from "./publish/run-publish.ts";
import type { PublishEndpoints } from "./publish/endpoints.ts";
import type { ExecutorSettings } from "./executors/executor.ts";
import { removeLeftovers } from "./executors/janitor.ts";

export interface RunnerOptions {
  url: string;
  runnerId: string;
  token: string;
  workDir: string;
  /** A directory of Flutter SDKs, one per version: <dir>/<version>/bin/flutter; missing ones are installed there (job/flutter.ts). */
  flutterSdks: string;
  /** The Flutter SDK's git repository that versions are installed from. */
  flutterGitUrl: string;
  /** ROOST_FLUTTER_GIT_URL was set: channels are installed too when missing (job/flutter.ts). */
  flutterGitUrlSet: boolean;
  /** All dependency caches together (job/cache.ts); least recently used ones are evicted beyond it. */
  cacheMaxBytes: number;
  labels: string[];
  /** TERM → KILL grace when a build is canceled. */
  graceMs: number;
  /** What build steps get of the runner's own environment: PATH, HOME, LANG and the passed variables (host-env.ts). */
  stepEnv: Record<string, string>;
  log: Log;
  stop: AbortSignal;
  /** Stop after one job (a runner in a VM made for one build). */
  once?: boolean;
  /** Where build commands run (runner/executors/); host when absent. */
  executor?: ExecutorSettings;
  /** Run build steps even as the daemon's user on its host (runner/host-user.ts): tests and single-user trials only. */
  unsafeAllowSameUser?: boolean;
  /** Take publishes too (docs/publishing.md); false: builds only (ROOST_RUNNER_PUBLISH=false). Default true. */
  publish?: boolean;
  /** Where the store clients send their requests (runner/publish/endpoints.ts); the stores' own hosts by default. */
  publishEndpoints?: PublishEndpoints;
}

/** The daemon refused this runner (revoked, wrong token): `roost runner` exits 1. */
export class RunnerRefused extends Error {}

const CLAIM_WAIT_SECONDS = 20;

export async function runRunner(o: RunnerOptions): Promise<void> {
  const api = new RunnerApi(o.url, o.runnerId, o.token, o.stop, o.log);
  let connected;
  try {
    connected = await api.connect({ labels: o.labels, capabilities: capabilities(o), version: "roost-runner/0.1" });
  } catch (error) {
    if (!(error instanceof Stopping)) throw error;
    o.log("runner stopped");
    return;
  }
  if (!connected.ok) throw new RunnerRefused(`Roost refused this runner: ${connected.status} ${connected.code}: ${connected.message}`);
  const heartbeatMs = connected.body.heartbeat_seconds * 1000;
  // Build code in a container reaches nothing of the host's users (executors/container.ts).
  const problem = o.executor?.kind === "container" ? null : await sameUserProblem(o.url, connected.body.daemon_uid, process.getuid?.());
  if (problem && !o.unsafeAllowSameUser) throw new SameUserRefusal(refusalMessage(problem));
  const unsafe = problem ? `WARNING (${UNSAFE_FLAG}): ${problem}` : null;
  if (unsafe) o.log(unsafe, { level: "warn" });
  const container = o.executor?.kind === "container" ? o.executor : null;
  o.log("runner connected", {
    url: o.url,
    runner_id: o.runnerId,
    executor: o.executor?.kind ?? "host",
    ...(container
      ? { engine: container.engine.name, rootless: container.engine.rootless, image: container.image }
      : { build_steps_get: Object.keys(o.stepEnv) }),
  });
  if (container) {
    container.engine.cwd = join(o.workDir, "engine");
    mkdirSync(container.engine.cwd, { recursive: true });
    await removeLeftovers(container.engine, o.runnerId, o.workDir, o.log);
  }
  try {
    for (let refusals = 0; !o.stop.aborted; ) {
      const claimId = crypto.randomUUID();
      let claim;
      try {
        claim = await api.claim(claimId, CLAIM_WAIT_SECONDS, o.stop, o.publish === false ? ["build"] : ["build", "publish"]);
      } catch (error) {
        if (!(error instanceof Stopping)) throw error;
        await handBackClaim(api, claimId, o);
        break;
      }
      if (claim.ok) {
        refusals = 0;
        if (claim.body?.job) {
          await runJob(api, claim.body.job, o, heartbeatMs, unsafe);
          if (container) await removeLeftovers(container.engine, o.runnerId, o.workDir, o.log);
          if (o.once) break;
        } else if (claim.body?.publish) {
          await runPublish(api, claim.body.publish, o);
        }
      } else if (claim.status === 401 || claim.status === 403) {
        throw new RunnerRefused(`Roost refused this runner: ${claim.status} ${claim.code}: ${claim.message}`);
      } else {
        o.log("claim refused", { level: "warn", status: claim.status, code: claim.code, message: claim.message });
        await sleepUnless(backoffMs(++refusals), o.stop);
      }
    }
  } catch (error) {
    if (!(error instanceof Stopping)) throw error;
    o.log("stopped without handing everything back: Roost could not be reached in time", { level: "warn" });
  }
  o.log("runner stopped");
}

/**
 * The runner stopped during a claim's long poll: the daemon may have handed it a job just then.
 * A claim retried with the same claim_id answers that same job (and one that waits 0 s claims
 * at most once); whatever it answers is handed back.
 */
async function handBackClaim(api: RunnerApi, claimId: string, o: RunnerOptions): Promise<void> {
  const again = await api.claim(claimId, 0, undefined, o.publish === false ? ["build"] : ["build", "publish"]);
  if (again.ok && again.body?.job) await releaseJob(api, again.body.job, o);
  if (again.ok && again.body?.publish) await api.releasePublish(again.body.publish.deployment_id).catch(() => {});
}

function capabilities(o: RunnerOptions) {
  const os = process.platform === "darwin" ? "macos" : process.platform === "win32" ? "windows" : "linux";
  const versions = existsSync(o.flutterSdks) ? readdirSync(o.flutterSdks).filter((v) => existsSync(join(o.flutterSdks, v, "bin", "flutter"))) : [];
  return { os, arch: process.arch, flutter_versions: versions, xcode: os === "macos" ? "installed" : null };
}
