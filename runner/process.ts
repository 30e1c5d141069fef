// Running one build command: in its own process group, so a cancel stops the whole tree
// (TERM, then KILL after a grace period), with stdout and stderr read line by line.
//
// A command is over when its shell exits. Background processes it started (`emulator &`, a mock
// server) keep its output pipes open, so waiting for the pipes to close would wait for them:
// once the shell has exited, the output is drained for at most OUTPUT_DRAIN_MS and the command is
// done. Those processes keep running (and their output keeps arriving) until the job stops its
// commands' process groups when it ends (job-run.ts stopLeftovers).
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

export interface CommandResult {
  exitCode: number;
  signal: NodeJS.Signals | null;
}

/** How long output is still awaited after the shell exited while background processes hold the pipes. */
const OUTPUT_DRAIN_MS = 250;
/** … and when nothing of the group is left (the pipes close at once, unless a process left the group). */
const OUTPUT_DRAIN_ALONE_MS = 2000;

export interface RunningCommand {
  pid: number;
  done: Promise<CommandResult>;
  /** TERM to the whole process group; KILL after `graceMs` if anything is left. */
  stop(graceMs: number): Promise<void>;
}

export function runCommand(
  command: string,
  options: { cwd: string; env: Record<string, string>; onLine(stream: "stdout" | "stderr", text: string): void },
): RunningCommand {
  const child: ChildProcess = spawn("/bin/bash", ["-o", "pipefail", "-c", command], {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = Promise.all([pumpLines(child.stdout, (t) => options.onLine("stdout", t)), pumpLines(child.stderr, (t) => options.onLine("stderr", t))]);
  // "exit", not "close": close waits for the pipes, which a background process may hold forever.
  const exited = new Promise<CommandResult>((resolve) =>
    child.on("exit", (code, signal) => resolve({ exitCode: code ?? (signal ? 128 + signalNumber(signal) : 1), signal })),
  );
  const done = exited.then(async (r) => {
    const drainMs = child.pid !== undefined && groupAlive(child.pid) ? OUTPUT_DRAIN_MS : OUTPUT_DRAIN_ALONE_MS;
    await Promise.race([output, Bun.sleep(drainMs)]);
    return r;
  });
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
      // The group's last lines (a background process's) reach the log before the job finishes.
      await Promise.race([output, Bun.sleep(OUTPUT_DRAIN_MS)]);
    },
  };
}

/** Reads a stream line by line (a last line without a newline too); resolves at its end. */
export function pumpLines(source: NodeJS.ReadableStream | null, onLine: (text: string) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    if (!source) return resolve();
    let carry = "";
    source.setEncoding("utf8");
    source.on("data", (chunk: string) => {
      carry += chunk;
      let at: number;
      while ((at = carry.indexOf("\n")) >= 0) {
        onLine(carry.slice(0, at).replace(/\r$/, ""));
        carry = carry.slice(at + 1);
      }
    });
    source.on("end", () => {
      if (carry) onLine(carry);
      resolve();
    });
  });
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
