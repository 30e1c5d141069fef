// What the container executor's end-to-end tests share (docs/runners.md "Executors"): the test
// image scripts/ensure-test-image builds with Podman, the app their builds check out, and a world
// of `roost runner --executor container` processes building a project of the ci-daemon world.
import { join } from "node:path";
import type { Subprocess } from "bun";
import { REPO_ROOT } from "./daemon.ts";
import {
  commitRepository,
  isFinished,
  runnerEnv,
  spawnRunner,
  startGithubProject,
  type GithubProject,
  type RegisteredRunner,
  type RunnerProcess,
} from "./ci-daemon.ts";

/** Where scripts/ensure-test-image keeps what it made (the image's tarball, the tests' containers.conf). */
export const TEST_CACHE_DIR = process.env.ROOST_TEST_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(process.env.HOME ?? "/root", ".cache"), "roost-tests");

/** The test image's name, built (or found) by scripts/ensure-test-image; an error saying why when this machine cannot build it (never a skip). */
export function ensureTestImage(): string {
  const made = Bun.spawnSync(["bash", join(REPO_ROOT, "scripts/ensure-test-image")], { stdout: "pipe", stderr: "pipe" });
  if (made.exitCode !== 0)
    throw new Error(`the test image cannot be built on this machine (scripts/ensure-test-image exited ${made.exitCode}): ${made.stderr.toString().trim()}`);
  return made.stdout.toString().trim().split("\n").at(-1)!;
}

/** The app the container builds check out, committed on main in `dir` (made here): a README, lib/main.dart and an empty pubspec.lock; the commit. */
export function commitTestApp(dir: string): Promise<string> {
  return commitRepository(dir, { "README.md": "# app\n", "lib/main.dart": "void main() {}\n", "pubspec.lock": "packages: {}\n" });
}

/** A service's command: a small HTTP server of the test image's perl, on port 8080, answering every request with $GREETING. */
export const GREETING_SERVER = [
  "perl",
  "-MIO::Socket::INET",
  "-e",
  '$s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 8080, Listen => 5, ReuseAddr => 1) or die $!; while ($c = $s->accept) { print $c "HTTP/1.0 200 OK\\r\\n\\r\\n$ENV{GREETING}\\n"; close $c }',
];
/** A step asking the service at alias `web` for its greeting, until it answers (10 s at most). */
const GREETING_CLIENT =
  "for i in $(seq 100); do (exec 3<>/dev/tcp/web/8080 && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3) 2>/dev/null && break; sleep 0.1; done";

export interface ContainerRunner extends RegisteredRunner, RunnerProcess {
  workDir: string;
}

export interface StartRunnerOptions {
  /** More `roost runner` arguments (--once, --memory 512m). */
  args?: string[];
  /** The runner again, after it stopped: its registration and work directory. */
  again?: ContainerRunner;
  env?: Record<string, string>;
  /** A command the runner runs through (nsenter into a namespace), and the daemon's address from there. */
  via?: { prefix: string[]; url: string };
}

export interface ContainerWorld extends GithubProject {
  image: string;
  commit: string;
  /** A `roost runner --executor container` process of a runner registered for it (unless `again`); it is stopped by `stopRunners`. */
  startRunner(options?: StartRunnerOptions): Promise<ContainerRunner>;
  /** A pipeline with `executionConfig`; its id. */
  pipeline(executionConfig: Record<string, unknown>): Promise<string>;
  /** A build of the pipeline at the app's commit; its id. */
  build(pipelineId: string): Promise<string>;
  /** A build whose service `web` (GREETING_SERVER) answers `greeting`, which its build step asks for before it runs `then`; `executionConfig` adds to its pipeline's. Its id. */
  buildWithService(greeting: string, then?: string[], executionConfig?: Record<string, unknown>): Promise<string>;
  /** Polls the build until `predicate` holds (by default: it finished); the build. */
  waitFor(buildId: string, predicate?: (b: any) => boolean): Promise<any>;
  /** SIGTERM to every runner started, each awaited: a test that failed half-way leaves no runner to take the next test's builds. */
  stopRunners(): Promise<void>;
  /** The runners killed, the daemon and the host-API stand-in stopped. */
  stop(): Promise<void>;
}

/**
 * The app of `work`/app committed, a daemon (its data in `work`/data, a runner lease of 4 s) with a
 * GitHub project on it, and runners of `engine` running builds in `image`, with `env` besides
 * their own (HOME in `work`/runner-home, their work directory `work`/runner-work-<id>).
 */
export async function startContainerWorld(options: {
  work: string;
  engine: "podman" | "docker";
  image: string;
  repositoryId: number;
  env: Record<string, string>;
  timeoutMs: number;
}): Promise<ContainerWorld> {
  const { work, engine, image } = options;
  const commit = await commitTestApp(join(work, "app"));
  const ci = await startGithubProject({
    daemon: { dataDir: join(work, "data"), cleanup: false, env: { ROOST_RUNNER_HEARTBEAT_SECONDS: "1", ROOST_RUNNER_LEASE_SECONDS: "4" } },
    repository: { id: options.repositoryId, full_name: "acme/app", clone_url: join(work, "app") },
  });
  const running: Subprocess[] = [];
  const pipeline = (executionConfig: Record<string, unknown>) => ci.createPipeline({ execution_config: executionConfig });
  const build = (pipelineId: string) => ci.queueBuild(pipelineId, commit);
  return {
    ...ci,
    image,
    commit,
    async startRunner({ args = [], again, env = {}, via } = {}) {
      const registered = again ?? (await ci.registerRunner());
      const workDir = again?.workDir ?? join(work, `runner-work-${registered.id}`);
      const runner = spawnRunner(
        ["--executor", "container", "--engine", engine, "--image", image, ...args],
        {
          ...runnerEnv(via?.url ?? ci.url, registered, workDir),
          HOME: join(work, "runner-home"),
          ROOST_RUNNER_GRACE_SECONDS: "2",
          ...options.env,
          ...env,
        },
        via?.prefix,
      );
      running.push(runner.proc);
      return { id: registered.id, token: registered.token, workDir, ...runner };
    },
    pipeline,
    build,
    async buildWithService(greeting, then = [], executionConfig = {}) {
      const services = [{ image, alias: "web", env: { GREETING: greeting }, command: GREETING_SERVER }];
      return build(await pipeline({ platforms: [], services, commands: { build: [GREETING_CLIENT, ...then] }, ...executionConfig }));
    },
    waitFor: (buildId, predicate = isFinished) => ci.waitForBuild(buildId, predicate, options.timeoutMs, 200),
    async stopRunners() {
      for (const p of running.splice(0)) {
        p.kill("SIGTERM");
        await p.exited;
      }
    },
    async stop() {
      for (const p of running) p.kill("SIGKILL");
      await ci.stop();
    },
  };
}
