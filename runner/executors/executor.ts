// Where a job's commands run (docs/runners.md "Executors"). The runner itself always checks out,
// restores and saves caches, and uploads artifacts on its own host; an executor runs the build's
// commands:
//   host       as the runner's OS user, directly on its host (what every runner did before
//              executors, and what a Mac runner does)
//   container  in one fresh container per build (container.ts), through Podman or Docker
import { runCommand, groupAlive, type RunningCommand } from "../process.ts";
import type { ExecutorUsed } from "../../lib/runners/protocol-wire.ts";
import type { ContainerSettings } from "./container.ts";

/** How a runner runs its builds' commands (`roost runner --executor`). */
export type ExecutorSettings = { kind: "host" } | ContainerSettings;

export type ExecutorKind = "host" | "container";

export interface CommandOptions {
  /** The command's working directory, as the command sees it. */
  cwd: string;
  env: Record<string, string>;
  onLine(stream: "stdout" | "stderr", text: string): void;
}

/** What a build records about where it ran (reported with the job's finish, shown on the build). */
export type ExecutorRecord = ExecutorUsed;

export interface Executor {
  readonly kind: ExecutorKind;
  /** A path on the runner's host (the workspace, the cache homes, a Flutter SDK) as the job's commands see it. */
  inside(hostPath: string): string;
  /** The runner's own variables that build steps get here (runner/host-env.ts picked them). */
  stepEnv(runnerStepEnv: Record<string, string>): Record<string, string>;
  /** PATH when the job sets none (the image's, in a container). */
  basePath(): string | undefined;
  run(command: string, options: CommandOptions): RunningCommand;
  /** Of these commands, those whose process group still has a process running. */
  alive(commands: RunningCommand[]): Promise<RunningCommand[]>;
  /** After a command failed: why, when it was the build's memory limit (a sentence), else null. */
  outOfMemory(): Promise<string | null>;
  record(): ExecutorRecord;
  /** Everything the job left of itself in the executor is gone (idempotent); why not otherwise. */
  remove(): Promise<string | null>;
}

/** Today's behaviour: commands run as the runner's user, on its host, each in its own process group. */
export class HostExecutor implements Executor {
  readonly kind = "host";

  inside(hostPath: string): string {
    return hostPath;
  }

  stepEnv(runnerStepEnv: Record<string, string>): Record<string, string> {
    return runnerStepEnv;
  }

  basePath(): undefined {
    return undefined;
  }

  run(command: string, options: CommandOptions): RunningCommand {
    return runCommand(command, options);
  }

  async alive(commands: RunningCommand[]): Promise<RunningCommand[]> {
    return commands.filter((c) => groupAlive(c.pid));
  }

  async outOfMemory(): Promise<null> {
    return null;
  }

  record(): ExecutorRecord {
    return { kind: "host", engine: null, image: null, image_digest: null, limits: null, network: null, error: null };
  }

  async remove(): Promise<null> {
    return null;
  }
}
