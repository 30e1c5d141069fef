// Running one claimed job, step by step (steps.ts), with a heartbeat that renews its lease and
// carries cancels. A runner told to stop before the job's first step hands the job back (the
// build is queued again for another runner); once a step has run, the job is canceled and
// finished as canceled (docs/runners.md "Stopping a runner").
import type { ClaimedJob } from "../../lib/runners/protocol-wire.ts";
import type { RunnerApi } from "../client.ts";
import type { RunnerOptions } from "../agent.ts";
import { JobRun } from "./job-run.ts";
import { removeCacheHomes, restoreCache, saveCache } from "./cache.ts";
import { formatTimeout } from "../../lib/pipelines/config.ts";
import { build, buildPlatform, checkout, postBuild, preBuild, setUpFlutter, startContainer } from "./steps.ts";
import { watchDisk } from "../executors/disk-watch.ts";
import { uploadArtifacts } from "./artifacts.ts";
import { uploadTestReports } from "./test-reports.ts";
import { cleanUp, finish } from "./finish.ts";
import { removeSecretFiles, setUpAppleSigning, writeSecretFiles } from "./secret-files.ts";
import { writeKeyProperties } from "./android-signing.ts";
import { maskLine } from "../masking.ts";

export async function runJob(api: RunnerApi, job: ClaimedJob, o: RunnerOptions, heartbeatMs: number, unsafe: string | null): Promise<void> {
  if (o.stop.aborted) return releaseJob(api, job, o);
  const run = new JobRun(api, job, o);
  const limit = run.config.timeout_seconds;
  const deadline = setTimeout(() => run.timeOut(`the build ran past its timeout of ${formatTimeout(limit)}`), limit * 1000);
  const onStop = () => run.stopForRunner();
  o.stop.addEventListener("abort", onStop, { once: true });
  let disk: { stop(): void } | null = null;
  const beat = setInterval(() => {
    void api.heartbeat([job.job_id]).then(
      (a) => a.ok && a.body.cancel.includes(job.job_id) && run.cancel(),
      () => {},
    );
  }, heartbeatMs);
  try {
    // Every build log of an unsafe runner says so, where the project's people will see it.
    if (unsafe) run.system("", `[roost] ${unsafe}`);
    if (job.withheld_secrets.length)
      run.system("", `[roost] secrets not given to this build (${job.withheld_reason ?? "not trusted"}): ${job.withheld_secrets.join(", ")}`);
    writeSecretFiles(run);
    await checkout(run);
    if (run.status === "succeeded" && !run.canceled) writeKeyProperties(run);
    if (run.status === "succeeded" && !run.canceled) setUpAppleSigning(run);
    await setUpFlutter(run);
    await restoreCache(run);
    await startContainer(run);
    disk = watchDisk(run);
    await preBuild(run);
    for (const platform of run.config.platforms) await buildPlatform(run, platform);
    await build(run);
    await postBuild(run);
    // The steps are over: what they left running in the background is stopped now, and logged.
    await run.stopLeftovers();
    // A failed build says what became of a service that stopped (its exit code and last output).
    if (run.status === "failed" && run.container) for (const line of await run.container.servicesReport()) run.system("", maskLine(line, run.secrets));
    // Test reports go whether the steps passed or failed: a failing test is what they tell.
    await uploadTestReports(run);
    await saveCache(run);
    await uploadArtifacts(run);
    // Secret files (and the build's container, with its tmpfs) are gone before the build is reported finished.
    removeSecretFiles(run);
    disk?.stop();
    const left = await run.executor.remove();
    if (left) o.log(left, { level: "warn", job_id: job.job_id });
    await finish(run);
    o.log("job done", { job_id: job.job_id, build_id: job.build.id, status: run.status, exit_code: run.exitCode });
  } finally {
    clearInterval(beat);
    clearTimeout(deadline);
    disk?.stop();
    await run.stopLeftovers().catch(() => {});
    const left = await run.executor.remove().catch((e: Error) => e.message);
    if (left) o.log(left, { level: "warn", job_id: job.job_id });
    removeCacheHomes(run);
    o.stop.removeEventListener("abort", onStop);
    removeSecretFiles(run);
    cleanUp(run);
  }
}

/** Hands back a job the runner will not start. */
export async function releaseJob(api: RunnerApi, job: ClaimedJob, o: RunnerOptions): Promise<void> {
  const answer = await api.release(job.job_id);
  if (answer.ok) o.log("job handed back: the runner is stopping", { job_id: job.job_id, build_id: job.build.id });
  else o.log("could not hand back a job", { level: "warn", job_id: job.job_id, status: answer.status, code: answer.code });
}
