// The container engine the container executor drives through its CLI (docs/runners.md
// "Executors"): Podman, rootful or rootless, or Docker. `roost runner --engine` names one;
// otherwise the first of podman and docker whose `info` answers is used, so a `docker` CLI without
// a daemon behind it is not mistaken for an engine.
//
// The engine's processes get the runner's environment without its ROOST_ variables (the runner's
// token is one): podman and docker need HOME, XDG_RUNTIME_DIR, CONTAINERS_CONF, DOCKER_HOST and
// the like, a build's container needs nothing of it.

export type EngineName = "podman" | "docker";
export const ENGINES: readonly EngineName[] = ["podman", "docker"];

export interface Engine {
  name: EngineName;
  /** Rootless Podman (or rootless Docker): container uids map into the runner user's subordinate ids. */
  rootless: boolean;
  /**
   * Rootless Podman on cgroups v1: it cannot set a container's cgroup limits (--cpus, --memory,
   * --pids-limit) and runs it without them ("Resource limits are not supported and ignored on
   * cgroups V1 rootless systems"); the build log says so.
   */
  noCgroupLimits?: boolean;
  /** `podman version`'s or `docker version`'s client version, for the build's record. */
  version: string;
  /**
   * The working directory of the engine's processes: a directory of the runner's own
   * (<workdir>/engine), since conmon writes files there (an "oom" marker when an exec'd process
   * was killed for memory) and they must not land wherever the runner was started.
   */
  cwd?: string;
}

export interface EngineResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The runner's environment for the engine's processes: everything but ROOST_ variables, plus `extra`. */
export function engineEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !name.startsWith("ROOST_")) env[name] = value;
  return { ...env, ...extra };
}

/** Runs `<engine> <args>` to completion; stdin, when given, is written to it. */
export async function engineCall(
  engine: Pick<Engine, "name" | "cwd">,
  args: string[],
  options: { stdin?: Uint8Array; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<EngineResult> {
  let proc;
  try {
    proc = Bun.spawn([engine.name, ...args], {
      stdin: options.stdin ?? "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: options.env ?? engineEnv(),
      ...(engine.cwd ? { cwd: engine.cwd } : {}),
    });
  } catch (error) {
    return { code: 127, stdout: "", stderr: `${engine.name}: ${(error as Error).message}` };
  }
  const timer = options.timeoutMs ? setTimeout(() => proc.kill("SIGKILL"), options.timeoutMs) : null;
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (timer) clearTimeout(timer);
  return { code, stdout, stderr };
}

/** The engine's own last words on a failed call: its last non-empty stderr line, without "Error: ". */
export function engineError(result: EngineResult): string {
  const line = result.stderr.trim().split("\n").filter(Boolean).at(-1) ?? `exit code ${result.code}`;
  return line.replace(/^(Error|error): /, "").slice(0, 300);
}

/**
 * The engine to use: the named one, checked, or the first that answers. A sentence saying why
 * none can be used otherwise (`roost runner` exits 2 with it).
 */
export async function detectEngine(named: EngineName | undefined): Promise<Engine | string> {
  const problems: string[] = [];
  for (const name of named ? [named] : ENGINES) {
    const engine = await probe(name);
    if (typeof engine !== "string") return engine;
    problems.push(engine);
  }
  return named ? problems[0]! : `no container engine answers (${problems.join("; ")}); install Podman or Docker, or use --executor host`;
}

async function probe(name: EngineName): Promise<Engine | string> {
  const format = name === "podman" ? "{{.Host.Security.Rootless}} {{.Host.CgroupsVersion}}" : "{{json .SecurityOptions}}";
  const info = await engineCall({ name }, ["info", "--format", format], { timeoutMs: 30_000 });
  if (info.code !== 0) return `${name} info failed: ${engineError(info)}`;
  const version = await engineCall({ name }, ["version", "--format", "{{.Client.Version}}"], { timeoutMs: 30_000 });
  const [podmanRootless, cgroups] = info.stdout.trim().split(" ");
  const rootless = name === "podman" ? podmanRootless === "true" : info.stdout.includes("rootless");
  const noCgroupLimits = name === "podman" && rootless && cgroups === "v1";
  return { name, rootless, noCgroupLimits, version: version.code === 0 ? version.stdout.trim() : "" };
}
