// Finishing a job: only once the daemon has every line. A 409 log_incomplete says how many it
// has; the runner resends from there and finishes again.
import { rmSync } from "node:fs";
import { HEADER } from "../../lib/runners/protocol-wire.ts";
import type { JobRun } from "./job-run.ts";

export async function finish(run: JobRun): Promise<void> {
  if (run.canceled)
    run.system(
      "",
      run.stoppedByRunner
        ? "[roost] the runner is stopping: the build was canceled and its process tree stopped"
        : "[roost] build canceled: the running command's process tree was stopped",
    );
  await run.shipper.drain();
  const failureReason = run.stoppedByRunner ? "the runner was stopped (SIGTERM) while the build ran" : run.failureReason;
  for (let attempt = 0; attempt < 20; attempt++) {
    const done = await run.api.finish(run.id, {
      status: run.status,
      exit_code: run.exitCode,
      line_count: run.shipper.total,
      ...(failureReason ? { failure_reason: failureReason } : {}),
      ...(run.sdkUsed ? { flutter_sdk: run.sdkUsed } : {}),
      executor: run.executor.record(),
    });
    if (done.ok || done.status !== 409 || done.code !== "log_incomplete") break;
    run.shipper.rewind(Number(done.headers.get(HEADER.logNextLine) ?? 0));
    await run.shipper.drain();
  }
}

export function cleanUp(run: JobRun): void {
  run.shipper.stop();
  rmSync(run.workspace, { recursive: true, force: true });
}
