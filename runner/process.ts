// Running one build command: in its own process group, so a cancel stops the whole tree
// (TERM, then KILL after a grace period), with stdout and stderr read line by line.
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

export interface CommandResult {
  exitCode: number;
  signal: NodeJS.Signals | null;
}

export interface RunningCommand {
  pid: number;
  done: Promise<CommandResult>;
  /** TERM to the whole process group; KILL after `graceMs` if anything is left. */
  stop(graceMs: number): Promise<void>;
}

export function runCommand(command: string, options: { cwd: string; env: Record<string, string>; onLine(stream: "stdout" | "stderr", text: string): void }): RunningCommand {
  const child: ChildProcess = spawn("/bin/bash", ["-o", "pipefail", "-c", command], { cwd: options.cwd, env: options.env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const pump = (stream: "stdout" | "stderr", source: NodeJS.ReadableStream | null) =>
    new Promise<void>((resolve) => {
      if (!source) return resolve();
      let carry = "";
      source.setEncoding("utf8");
      source.on("data", (chunk: string) => {
        carry += chunk;
        let at: number;
        while ((at = carry.indexOf("\n")) >= 0) {
          options.onLine(stream, carry.slice(0, at).replace(/\r$/, ""));
          carry = carry.slice(at + 1);
        }
      });
      source.on("end", () => {
        if (carry) options.onLine(stream, carry);
        resolve();
      });
    });
  const output = Promise.all([pump("stdout", child.stdout), pump("stderr", child.stderr)]);
  const exited = new Promise<CommandResult>((resolve) => child.on("close", (code, signal) => resolve({ exitCode: code ?? (signal ? 128 + signalNumber(signal) : 1), signal })));
  const done = Promise.all([exited, output]).then(([r]) => r);
  return {
    pid: child.pid ?? -1,
    done,
    async stop(graceMs) {
      if (child.pid === undefined) return;
      const group = -child.pid;
      try {
        process.kill(group, "SIGTERM");
      } catch {
        return; // already gone
      }
      const finished = await Promise.race([done.then(() => true), Bun.sleep(graceMs).then(() => false)]);
      if (!finished || groupAlive(child.pid)) {
        try {
          process.kill(group, "SIGKILL");
        } catch {
          // gone meanwhile
        }
      }
    },
  };
}

/**
 * Whether any process of the group is still running. On Linux /proc is read, because zombies
 * (exited, not yet reaped by a PID 1 that may never reap them) still answer signal 0; elsewhere
 * signal 0 probes the group.
 */
export function groupAlive(pgid: number): boolean {
  if (process.platform === "linux") {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        if (Number(fields[2]) === pgid && fields[0] !== "Z") return true;
      } catch {
        // the process went away while we looked
      }
    }
    return false;
  }
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

function signalNumber(signal: NodeJS.Signals): number {
  return ({ SIGTERM: 15, SIGKILL: 9, SIGINT: 2, SIGHUP: 1 } as Record<string, number>)[signal] ?? 1;
}
