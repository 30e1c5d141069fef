// The container executor (docs/runners.md "Executors"): one fresh container per build, removed
// when the job ends, driven through the engine's CLI (engine.ts).
//
// What the container gets of the host: the job's workspace (its checkout) read-write at
// /roost/workspace, the job's own cache homes at /roost/homes (PUB_CACHE, GRADLE_USER_HOME,
// CP_HOME_DIR and HOME; restored into and saved from by the runner on its side, cache.ts), and a
// Flutter SDK of the runner's when the pipeline pins a version the image does not decide
// (/opt/roost/flutter, an overlay that the build's writes never reach). Nothing else: not the
// runner's home, its work directory, the cache store, its token, other jobs' workspaces.
//
// How it runs (the flags, `podman run` and `docker run` alike):
//   --init --entrypoint sleep IMAGE infinity   a keeper process; each command is an `exec` into it
//   --user UID:GID                             never root: the runner's own ids on a rootless
//                                              engine (Podman: --userns keep-id), else
//                                              --container-user (default 1000:1000), the workspace
//                                              and homes chowned to it
//   --cap-drop all --security-opt no-new-privileges
//   --tmpfs /run/roost/files                   the job's file variables (secrets), 0700, in memory,
//                                              gone with the container
//   --network slirp4netns:allow_host_loopback=false (Podman; Docker: its bridge) or none, and in
//                                              the container's network namespace the link-local
//                                              range (169.254.0.0/16, the cloud metadata address)
//                                              unreachable (network.ts)
//   --memory, --memory-swap (the same: no swap), --cpus, --pids-limit   the build's limits
//   --ulimit nofile=N:N --ulimit nproc=M:M     at or below the runner's own (limits.ts)
//   --label roost.job=… roost.runner=… roost.build=…   what start-up clean-up finds (janitor.ts)
//   --timeout (Podman)                         the engine kills it past the build's timeout even
//                                              if the runner is gone for good
//
// A pipeline's services are containers of their own in the build container's network namespace
// (--network container:NAME, started after its routes are in place), labelled like it plus
// roost.service, removed before it. Images are pulled with the pipeline's registry credentials
// when it has them, through an auth file (0600, in the job's scratch, never mounted) that is gone
// before the container starts.
//
// A command runs as `exec -i … bash -o pipefail -c WRAPPER` (sh when the image has no bash). The
// wrapper first says its process group on stderr (one marker line the runner takes out), then
// reads the step's environment from its stdin (`export NAME='value'` lines), so no value, secret
// or not, is ever on a command line the host's `ps` shows. Stopping a command signals its process
// group inside the container; the container's removal ends whatever is left.
import { chmodSync, existsSync, lchownSync, lstatSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { spawn } from "node:child_process";
import { pumpLines, type CommandResult, type RunningCommand } from "../process.ts";
import { engineCall, engineEnv, engineError, type Engine } from "./engine.ts";
import { DEFAULT_PIDS, describeLimits, formatMebibytes, ownSoftLimit, resolveLimits, type Limits } from "./limits.ts";
import { blockMetadataRoutes } from "./network.ts";
import type { CommandOptions, Executor, ExecutorRecord } from "./executor.ts";

export interface ContainerSettings {
  kind: "container";
  engine: Engine;
  /** The runner's default image (--image), for pipelines that name none. */
  image: string | null;
  /** The runner's limits: its builds' defaults and ceiling. */
  limits: Limits;
  /** Who steps run as when the runner is root on a rootful engine. */
  user: { uid: number; gid: number };
}

/** Where the job's parts are inside its container. */
export const INSIDE = { workspace: "/roost/workspace", homes: "/roost/homes", files: "/run/roost/files", sdk: "/opt/roost/flutter" } as const;

/** Of the runner's step variables, those that mean the same inside a container (no host paths). */
const PASSED_INTO_CONTAINERS =
  /^(https?_proxy|no_proxy|all_proxy|HTTPS?_PROXY|NO_PROXY|ALL_PROXY|PUB_HOSTED_URL|FLUTTER_STORAGE_BASE_URL|GRADLE_OPTS|LANG|LC_ALL)$/;

/**
 * What a service's entrypoint may do as root in its container: change owners and modes of its data
 * directory and become its own user (gosu, su-exec), bind a port below 1024. Nothing else of
 * Docker's default set (no NET_RAW, MKNOD, SETFCAP, SYS_CHROOT).
 */
const SERVICE_CAPABILITIES = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID", "NET_BIND_SERVICE"];

const MARKER = "\u001eroost-pgid ";

/** A single-quoted shell word. */
const q = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

export interface ContainerStart {
  image: string | null;
  network: "default" | "none";
  limits: Partial<Limits> | undefined;
  /** Service containers started beside the build in its network (docs/pipelines.md "Services"). */
  services: { image: string; alias: string; env: Record<string, string>; command?: string[] }[];
  /** The registry auth file images are pulled with (registry_credentials), or why there is none. */
  registry: { key: string; auth: string | null; problem: string | null } | null;
  /** File variables: written into the container's tmpfs once it runs. */
  files: { key: string; content: Buffer }[];
  /** A line for the build log. */
  say(text: string): void;
}

export class ContainerExecutor implements Executor {
  readonly kind = "container";
  readonly name: string;
  #image: string | null = null;
  #digest: string | null = null;
  #imagePath: string | undefined;
  #limits: Limits | null = null;
  #network: "default" | "none" | null = null;
  #error: string | null = null;
  #started = false;
  #removed = false;
  #shell = "/bin/bash";
  #oomBaseline = 0;
  #sdkDir: string | null = null;
  /** The names of the job's service containers that run. */
  #services: string[] = [];
  readonly #user: { uid: number; gid: number };

  constructor(
    readonly settings: ContainerSettings,
    readonly job: { jobId: string; runnerId: string; buildId: string; timeoutSeconds: number },
    readonly workspace: string,
    readonly homes: string,
    /** The job's own scratch directory on the host, outside everything mounted (the SDK overlay's layers). */
    readonly scratch: string,
  ) {
    this.name = `roost-job-${job.jobId}`;
    const own = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    // Root on a rootful engine chooses a build user; otherwise steps are the runner's own user
    // (mapped by keep-id on rootless Podman), which already owns the workspace.
    this.#user = own.uid === 0 && !settings.engine.rootless ? settings.user : own;
  }

  /** The runner's Flutter SDK for this build (a pinned version): mounted at /opt/roost/flutter. */
  useSdk(hostDir: string): string {
    this.#sdkDir = hostDir;
    return join(INSIDE.sdk, "bin");
  }

  inside(hostPath: string): string {
    for (const [host, inside] of [
      [this.workspace, INSIDE.workspace],
      [this.homes, INSIDE.homes],
      ...(this.#sdkDir ? [[this.#sdkDir, INSIDE.sdk]] : []),
    ] as const) {
      if (hostPath === host) return inside;
      if (hostPath.startsWith(host + "/")) return inside + hostPath.slice(host.length);
    }
    return hostPath;
  }

  stepEnv(runnerStepEnv: Record<string, string>): Record<string, string> {
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(runnerStepEnv)) if (PASSED_INTO_CONTAINERS.test(name)) env[name] = value;
    return { ...env, HOME: join(INSIDE.homes, "home") };
  }

  basePath(): string | undefined {
    return this.#imagePath;
  }

  filePath(key: string): string {
    return join(INSIDE.files, key);
  }

  record(): ExecutorRecord {
    return {
      kind: "container",
      engine: `${this.settings.engine.name}${this.settings.engine.rootless ? " (rootless)" : ""}${this.settings.engine.version ? ` ${this.settings.engine.version}` : ""}`,
      image: this.#image,
      image_digest: this.#digest,
      limits: this.#limits,
      network: this.#network,
      error: this.#error,
    };
  }

  /** Why the container could not start (also recorded on the build), or null once it runs. */
  async start(s: ContainerStart): Promise<string | null> {
    const fail = (why: string) => (this.#error = why);
    const engine = this.settings.engine;
    const image = s.image ?? this.settings.image;
    if (!image) return fail("no image: the pipeline names none (image:) and this runner has no default (roost runner --image)");
    this.#image = image;
    this.#network = s.network;
    const { limits, notes } = resolveLimits(this.settings.limits, s.limits);
    limits.pids ??= DEFAULT_PIDS;
    this.#limits = limits;
    for (const note of notes) s.say(`[roost] ${note}`);

    // 1. The images, the build's and its services': with registry credentials each is pulled (the
    // registry checks them, also for an image the engine has already: another project's pull must
    // not lend it), otherwise used when the engine has it and pulled with the engine's own.
    if (s.registry?.problem) return fail(s.registry.problem);
    const authFile = s.registry?.auth ? this.#writeAuthFile(s.registry.auth) : null;
    try {
      for (const ref of [image, ...s.services.map((svc) => svc.image)]) {
        const problem = await this.#ensureImage(ref, authFile ? { file: authFile, key: s.registry!.key } : null, s.say);
        if (problem) return fail(problem);
      }
    } finally {
      if (authFile) rmSync(dirname(authFile), { recursive: true, force: true });
    }
    const inspected = await engineCall(engine, ["image", "inspect", "--format", "{{json .}}", image]);
    if (inspected.code !== 0) return fail(`the image ${image} could not be inspected: ${engineError(inspected)}`);
    const info = imageInfo(inspected.stdout, image);
    this.#digest = info.digest;
    this.#imagePath = info.path;

    // 2. The workspace and the cache homes belong to the build's user.
    mkdirSync(join(this.homes, "home"), { recursive: true });
    if (process.getuid?.() === 0 && (this.#user.uid !== 0 || this.#user.gid !== 0)) {
      for (const dir of [this.workspace, this.homes]) chownTree(dir, this.#user.uid, this.#user.gid);
    }

    // 3. The container.
    const nofile = ownSoftLimit("Max open files");
    const nproc = ownSoftLimit("Max processes");
    const pids = limits.pids;
    const limitFlags = [
      "--pids-limit",
      String(pids),
      ...(nofile ? ["--ulimit", `nofile=${nofile}:${nofile}`] : []),
      "--ulimit",
      `nproc=${Math.min(nproc ?? pids, pids)}:${Math.min(nproc ?? pids, pids)}`,
      ...(limits.memory_mb ? ["--memory", `${limits.memory_mb}m`, "--memory-swap", `${limits.memory_mb}m`] : []),
      ...(limits.cpus ? ["--cpus", String(limits.cpus)] : []),
      ...(engine.name === "podman" ? ["--timeout", String(this.job.timeoutSeconds + 600)] : []),
    ];
    const labels = ["--label", `roost.job=${this.job.jobId}`, "--label", `roost.runner=${this.job.runnerId}`, "--label", `roost.build=${this.job.buildId}`];
    const args = [
      "run",
      "--detach",
      "--name",
      this.name,
      ...labels,
      "--init",
      "--entrypoint",
      "sleep",
      "--user",
      `${this.#user.uid}:${this.#user.gid}`,
      ...(engine.name === "podman" && engine.rootless ? ["--userns", "keep-id"] : []),
      "--cap-drop",
      "all",
      "--security-opt",
      "no-new-privileges",
      "--hostname",
      "roost-build",
      "--workdir",
      INSIDE.workspace,
      "--volume",
      `${this.workspace}:${INSIDE.workspace}:rw`,
      "--volume",
      `${this.homes}:${INSIDE.homes}:rw`,
      ...(this.#sdkDir ? ["--volume", `${this.#sdkDir}:${INSIDE.sdk}:${this.#sdkMountOptions()}`] : []),
      // Owned by the build's user: Podman's U option chowns it; Docker passes uid= and gid= to the mount.
      "--tmpfs",
      `${INSIDE.files}:rw,nosuid,nodev,noexec,size=64m,mode=0700,${engine.name === "podman" ? "U" : `uid=${this.#user.uid},gid=${this.#user.gid}`}`,
      "--network",
      s.network === "none" ? "none" : engine.name === "podman" ? "slirp4netns:allow_host_loopback=false" : "bridge",
      // Each service's alias names the build's own loopback, where the services listen (they share its network).
      ...s.services.flatMap((svc) => ["--add-host", `${svc.alias}:127.0.0.1`]),
      ...limitFlags,
      image,
      "infinity",
    ];
    const limitsText = engine.noCgroupLimits
      ? `${describeLimits(limits)} (cpus, memory and pids not enforced: rootless Podman cannot set them on cgroups v1)`
      : describeLimits(limits);
    s.say(
      `[roost] container: ${this.record().engine}, image ${image}${this.#digest ? ` (${this.#digest})` : ""}, network ${s.network === "none" ? "none" : "on (no host loopback, no link-local or metadata address)"}, ${limitsText}, steps as uid ${this.#user.uid}`,
    );
    const created = await engineCall(engine, args, { timeoutMs: 5 * 60_000 });
    this.#started = true;
    if (created.code !== 0) return fail(`the build's container could not start: ${engineError(created)}`);

    // 4. Its network: no link-local (metadata) address, before any of the build's code runs.
    if (s.network !== "none") {
      const blocked = await blockMetadataRoutes(engine, this.name);
      if (blocked) return fail(blocked);
    }

    // 5. The services, in the build container's network namespace (so behind the same routes).
    for (const svc of s.services) {
      const problem = await this.#startService(svc, [...labels, "--label", `roost.service=${svc.alias}`, ...limitFlags], s.say);
      if (problem) return fail(problem);
    }

    // 6. A shell, file variables in the tmpfs, the memory counter's start.
    if ((await this.#exec(["test", "-x", "/bin/bash"])).code !== 0) {
      this.#shell = "/bin/sh";
      s.say("[roost] the image has no /bin/bash: commands run with /bin/sh (no pipefail)");
    }
    for (const file of s.files) {
      const written = await this.#exec(["/bin/sh", "-c", 'umask 077 && cat > "$1"', "sh", this.filePath(file.key)], file.content);
      if (written.code !== 0) return fail(`the file variable ${file.key} could not be written into the container: ${engineError(written)}`);
    }
    this.#oomBaseline = await this.#oomKills();
    return null;
  }

  /** Null once the engine has the image; why not otherwise. */
  async #ensureImage(image: string, auth: { file: string; key: string } | null, say: (text: string) => void): Promise<string | null> {
    const engine = this.settings.engine;
    if (!auth && ((await engineCall(engine, ["image", "exists", image])).code === 0 || (await engineCall(engine, ["image", "inspect", image])).code === 0))
      return null;
    say(`[roost] pulling ${image}${auth ? ` with the registry credentials ${auth.key}` : ""}`);
    // Podman reads the file --authfile names (containers-auth.json(5)); Docker reads config.json in DOCKER_CONFIG.
    const pulled = await engineCall(engine, ["pull", ...(auth && engine.name === "podman" ? ["--authfile", auth.file] : []), image], {
      timeoutMs: 30 * 60_000,
      ...(auth && engine.name === "docker" ? { env: engineEnv({ DOCKER_CONFIG: dirname(auth.file) }) } : {}),
    });
    if (pulled.code === 0) return null;
    return `the image ${image} could not be pulled${auth ? ` with the registry credentials ${auth.key}` : ""}: ${engineError(pulled)}`;
  }

  /** The auth file, 0600 in a 0700 directory of the job's scratch (outside every mount); removed once the images are pulled. */
  #writeAuthFile(content: string): string {
    const dir = join(this.scratch, "registry-auth");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    const file = join(dir, "config.json");
    writeFileSync(file, content, { mode: 0o600 });
    return file;
  }

  /**
   * One service container: in the build container's network namespace, labelled like it (start-up
   * clean-up finds it), with the build's limits, no new privileges and only the capabilities an
   * image's entrypoint needs to drop to its own user (postgres', mysql's, redis'). Its environment
   * goes through a 0600 file removed once it runs, not the engine's command line.
   */
  async #startService(svc: ContainerStart["services"][number], flags: string[], say: (text: string) => void): Promise<string | null> {
    const engine = this.settings.engine;
    const envFile = join(this.scratch, `service-${svc.alias}.env`);
    mkdirSync(this.scratch, { recursive: true });
    writeFileSync(
      envFile,
      Object.entries(svc.env)
        .map(([k, v]) => `${k}=${v}\n`)
        .join(""),
      { mode: 0o600 },
    );
    say(
      `[roost] service ${svc.alias}: image ${svc.image}${svc.command ? `, command ${JSON.stringify(svc.command)}` : ""}, reachable at ${svc.alias} (the build's loopback)`,
    );
    const started = await engineCall(
      engine,
      [
        "run",
        "--detach",
        "--name",
        `${this.name}-svc-${svc.alias}`,
        ...flags,
        "--network",
        `container:${this.name}`,
        "--cap-drop",
        "all",
        ...SERVICE_CAPABILITIES.flatMap((cap) => ["--cap-add", cap]),
        "--security-opt",
        "no-new-privileges",
        "--env-file",
        envFile,
        svc.image,
        ...(svc.command ?? []),
      ],
      { timeoutMs: 5 * 60_000 },
    ).finally(() => rmSync(envFile, { force: true }));
    if (started.code !== 0) return `the service ${svc.alias} (${svc.image}) could not start: ${engineError(started)}`;
    this.#services.push(`${this.name}-svc-${svc.alias}`);
    return null;
  }

  /**
   * After a failed build, what became of each service that is not running any more: its exit code
   * and the last lines of its output, so a step that could not reach it says why (GitLab prints a
   * service's log with CI_DEBUG_SERVICES). Nothing for services still running.
   */
  async servicesReport(): Promise<string[]> {
    const lines: string[] = [];
    for (const name of this.#services) {
      const alias = name.slice(`${this.name}-svc-`.length);
      const state = await engineCall(this.settings.engine, ["inspect", "--format", "{{.State.Running}} {{.State.ExitCode}}", name]);
      const [running, code] = state.stdout.trim().split(" ");
      if (state.code !== 0 || running === "true") continue;
      lines.push(`[roost] service ${alias} is not running (exit code ${code}); its last output:`);
      const output = await engineCall(this.settings.engine, ["logs", "--tail", "20", name]);
      for (const line of `${output.stdout}${output.stderr}`.split("\n").filter(Boolean)) lines.push(`[roost]   ${line}`);
    }
    return lines;
  }

  run(command: string, options: CommandOptions): RunningCommand {
    return new ContainerCommand(this, command, options);
  }

  /**
   * The SDK's mount: Podman's overlay (Flutter writes its caches into its own directory; the
   * writes stay in the overlay's upper layer and go with the job), Docker's read-only bind. When
   * the build's user is not the SDK's owner (a root runner), the upper layer starts as a skeleton
   * of the SDK's directories owned by the build's user, so Flutter may create files in them, while
   * the SDK's own files stay read-only and the runner's SDK is never touched.
   */
  #sdkMountOptions(): string {
    if (this.settings.engine.name !== "podman") return "ro";
    if (process.getuid?.() !== 0 || this.#user.uid === 0) return "O";
    const upper = join(this.scratch, "sdk-upper");
    const work = join(this.scratch, "sdk-work");
    mkdirSync(work, { recursive: true });
    const skeleton = (from: string, to: string) => {
      mkdirSync(to, { recursive: true });
      lchownSync(to, this.#user.uid, this.#user.gid);
      for (const entry of readdirSync(from, { withFileTypes: true })) if (entry.isDirectory()) skeleton(join(from, entry.name), join(to, entry.name));
    };
    skeleton(this.#sdkDir!, upper);
    return `O,upperdir=${upper},workdir=${work}`;
  }

  /** `exec` argv into the container as the build's user, without a wrapper. */
  execArgs(argv: string[], options: { cwd?: string; stdin?: boolean } = {}): string[] {
    return [
      "exec",
      ...(options.stdin ? ["--interactive"] : []),
      "--user",
      `${this.#user.uid}:${this.#user.gid}`,
      ...(options.cwd ? ["--workdir", options.cwd] : []),
      this.name,
      ...argv,
    ];
  }

  get shell(): string {
    return this.#shell;
  }

  #exec(argv: string[], stdin?: Uint8Array) {
    return engineCall(this.settings.engine, this.execArgs(argv, { stdin: stdin !== undefined }), { stdin, timeoutMs: 60_000 });
  }

  /** Signals a process group inside the container (as the build's user, who owns it). */
  async signalGroup(pgid: number, signal: "TERM" | "KILL"): Promise<void> {
    await this.#exec(["/bin/sh", "-c", `kill -s ${signal} -- -${pgid} 2>/dev/null; true`]);
  }

  async alive(commands: RunningCommand[]): Promise<RunningCommand[]> {
    if (!this.#started || this.#removed) return [];
    // The process groups as the container numbers them: Podman's top says them; Docker's says
    // host pids, so the container's own /proc is read instead (the 5th field of stat, after the
    // command's parenthesised name, is the group).
    const docker = this.settings.engine.name === "docker";
    const top = docker
      ? await this.#exec(["/bin/sh", "-c", "cat /proc/[0-9]*/stat 2>/dev/null; true"])
      : await engineCall(this.settings.engine, ["top", this.name, "pid", "pgid"]);
    if (top.code !== 0) return [];
    const lines = top.stdout.trim().split("\n");
    const groups = new Set(
      docker ? lines.map((l) => Number(l.slice(l.lastIndexOf(")") + 2).split(" ")[2])) : lines.slice(1).map((l) => Number(l.trim().split(/\s+/)[1])),
    );
    return commands.filter((c) => c.pid > 1 && groups.has(c.pid));
  }

  /** The kernel's count of processes it killed for the container's memory limit (cgroup v2 memory.events, v1 memory.oom_control). */
  async #oomKills(): Promise<number> {
    const read = await this.#exec([
      "/bin/sh",
      "-c",
      "cat /sys/fs/cgroup/memory.events 2>/dev/null || cat /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null",
    ]);
    const m = /^oom_kill (\d+)$/m.exec(read.stdout);
    return m ? Number(m[1]) : 0;
  }

  async outOfMemory(): Promise<string | null> {
    if (!this.#started || this.#removed || !this.#limits?.memory_mb) return null;
    let killed = (await this.#oomKills()) > this.#oomBaseline;
    if (!killed) {
      // The keeper itself killed: the container is gone, and the engine says why.
      const state = await engineCall(this.settings.engine, ["inspect", "--format", "{{.State.OOMKilled}}", this.name]);
      killed = state.stdout.trim() === "true";
    }
    return killed ? `the build ran out of memory (limit ${formatMebibytes(this.#limits.memory_mb)})` : null;
  }

  async remove(): Promise<string | null> {
    if (!this.#started || this.#removed) return null;
    let problem = "";
    for (let attempt = 0; attempt < 5; attempt++) {
      // The services first: they live in the build container's network namespace.
      if (this.#services.length) {
        const services = await engineCall(
          this.settings.engine,
          ["rm", "--force", "--volumes", ...(this.settings.engine.name === "podman" ? ["--time", "0"] : []), ...this.#services],
          { timeoutMs: 120_000 },
        );
        if (services.code !== 0 && !/no such container|no container with name/i.test(services.stderr)) {
          problem = engineError(services);
          await Bun.sleep(500 * (attempt + 1));
          continue;
        }
        this.#services = [];
      }
      const removed = await engineCall(
        this.settings.engine,
        ["rm", "--force", "--volumes", ...(this.settings.engine.name === "podman" ? ["--time", "0"] : []), this.name],
        { timeoutMs: 120_000 },
      );
      if (removed.code === 0 || /no such container|no container with name/i.test(removed.stderr)) {
        this.#removed = true;
        rmSync(this.scratch, { recursive: true, force: true });
        return null;
      }
      problem = engineError(removed);
      await Bun.sleep(500 * (attempt + 1));
    }
    return `the build's container ${this.name} could not be removed: ${problem}`;
  }
}

/** One command `exec`ed into the build's container. */
class ContainerCommand implements RunningCommand {
  pid = -1;
  readonly done: Promise<CommandResult>;
  readonly #child;
  #pgid: Promise<number>;

  constructor(
    readonly executor: ContainerExecutor,
    command: string,
    options: CommandOptions,
  ) {
    const wrapper = `printf '${MARKER}%s\\n' "$$" >&2; . /dev/stdin || exit 125; exec </dev/null\n${command}`;
    const argv = executor.shell === "/bin/bash" ? ["/bin/bash", "-o", "pipefail", "-c", wrapper] : ["/bin/sh", "-c", wrapper];
    const child = spawn(executor.settings.engine.name, executor.execArgs(argv, { cwd: options.cwd, stdin: true }), {
      stdio: ["pipe", "pipe", "pipe"],
      env: engineEnv(),
      ...(executor.settings.engine.cwd ? { cwd: executor.settings.engine.cwd } : {}),
    });
    this.#child = child;
    child.stdin!.on("error", () => {});
    child.stdin!.end(
      Object.entries(options.env)
        .map(([k, v]) => `export ${k}=${q(v)}\n`)
        .join(""),
    );
    let resolvePgid: (n: number) => void;
    this.#pgid = new Promise((r) => (resolvePgid = r));
    let first = true;
    const output = Promise.all([
      pumpLines(child.stdout, (t) => options.onLine("stdout", t)),
      pumpLines(child.stderr, (t) => {
        if (first && t.startsWith(MARKER)) {
          first = false;
          this.pid = Number(t.slice(MARKER.length));
          resolvePgid(this.pid);
          return;
        }
        options.onLine("stderr", t);
      }),
    ]);
    const exited = new Promise<CommandResult>((resolve) => {
      child.on("error", () => resolve({ exitCode: 127, signal: null }));
      child.on("exit", (code, signal) => resolve({ exitCode: code ?? (signal ? 137 : 1), signal }));
    });
    this.done = exited.then(async (r) => {
      resolvePgid(-1);
      await Promise.race([output, Bun.sleep(2000)]);
      return r;
    });
  }

  async stop(graceMs: number): Promise<void> {
    const pgid = await Promise.race([this.#pgid, Bun.sleep(2000).then(() => -1)]);
    if (pgid > 1) await this.executor.signalGroup(pgid, "TERM");
    const finished = await Promise.race([this.done.then(() => true), Bun.sleep(graceMs).then(() => false)]);
    if (pgid > 1 && (!finished || (await this.executor.alive([this])).length > 0)) await this.executor.signalGroup(pgid, "KILL");
    if (!(await Promise.race([this.done.then(() => true), Bun.sleep(2000).then(() => false)]))) this.#child.kill("SIGKILL");
  }
}

/** The digest (repository@sha256:…) and PATH of an inspected image. */
export function imageInfo(json: string, reference: string): { digest: string | null; path: string | undefined } {
  let parsed: Record<string, any>;
  try {
    const value = JSON.parse(json);
    parsed = Array.isArray(value) ? value[0] : value;
  } catch {
    return { digest: null, path: undefined };
  }
  const repository = reference.split("@")[0]!.replace(/:[^/:]+$/, "");
  const repoDigests: string[] = parsed.RepoDigests ?? [];
  const digest = repoDigests.find((d) => d.startsWith(`${repository}@`)) ?? repoDigests[0] ?? (parsed.Digest ? `${repository}@${parsed.Digest}` : null);
  const env: string[] = parsed.Config?.Env ?? [];
  const path = env.find((e) => e.startsWith("PATH="))?.slice(5);
  return { digest, path };
}

/** chown -R without following links (a link the build planted must not hand it a host file). */
function chownTree(dir: string, uid: number, gid: number): void {
  if (!existsSync(dir)) return;
  const walk = (path: string) => {
    const st = lstatSync(path);
    if (st.uid !== uid || st.gid !== gid) lchownSync(path, uid, gid);
    if (st.isDirectory()) for (const entry of readdirSync(path)) walk(join(path, entry));
  };
  walk(dir);
}
