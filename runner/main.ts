// `roost runner`: the runner program's entry (bin/roost.ts dispatches here). It reads its flags
// and environment, then runs the loop in agent.ts until SIGTERM or SIGINT.
// Exit codes: 0 stopped · 1 the daemon refused the runner · 2 usage or configuration error
// (an unknown flag, a missing or invalid setting, the same-user refusal).
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { RunnerRefused, runRunner } from "./agent.ts";
import { SameUserRefusal, UNSAFE_FLAG } from "./host-user.ts";
import { DEFAULT_FLUTTER_GIT_URL } from "./job/flutter.ts";
import { DEFAULT_PASSED_ENV, passedEnvNames, passedEnvProblem, pickPassedEnv } from "./host-env.ts";
import { ENGINES, detectEngine, type EngineName } from "./executors/engine.ts";
import { parseMebibytes, type Limits } from "./executors/limits.ts";
import type { ExecutorSettings } from "./executors/executor.ts";
import { publishEndpointsFrom } from "./publish/endpoints.ts";

export const RUNNER_HELP = `roost runner: connect to a Roost daemon and run the builds it hands out (docs/runners.md).

Environment:
  ROOST_URL                  the daemon, http:// or https:// (default http://127.0.0.1:8080)
  ROOST_RUNNER_ID            from POST /v1/runners
  ROOST_RUNNER_TOKEN         roost_rt_… from POST /v1/runners (or its rotation)
  ROOST_RUNNER_WORKDIR       checkouts and the repository cache (default ./runner-work)
  ROOST_FLUTTER_SDKS         Flutter SDKs, <dir>/<version>/bin/flutter; a pinned version that is missing
                             is installed there (default <workdir>/flutter)
  ROOST_FLUTTER_GIT_URL      the Flutter SDK's git repository to install from (default
                             https://github.com/flutter/flutter.git); when set, a channel
                             (stable, beta) missing from PATH and the SDKs is installed too
  ROOST_CACHE_MAX_MB         dependency caches kept in <workdir>/caches, least recently used
                             evicted beyond this (default 10240)
  ROOST_RUNNER_LABELS        extra labels, comma-separated
  ROOST_RUNNER_GRACE_SECONDS TERM → KILL grace when a build is canceled (default 10)
  ROOST_RUNNER_ENV           more of the runner's variables to pass to build steps, comma-separated
                             (as --env NAME)
  ROOST_RUNNER_PUBLISH       false: take builds only, never a publish to a store (default true;
                             docs/publishing.md "Where a publish runs")

Build steps get PATH, HOME, LANG, Roost's variables, the pipeline's env and, when set here:
${wrapWords(DEFAULT_PASSED_ENV, "  ", 96)}
  --env NAME                 pass the runner's NAME too (repeatable); never a ROOST_ variable
                             (the runner's token is one)

Executors (docs/runners.md "Executors"):
  --executor host|container  host (default): build steps run as the runner's OS user on this host;
                             container: each build in a fresh container, removed when it ends
  --engine podman|docker     the container engine (default: the first of podman, docker that answers)
  --image IMAGE              the image of builds whose pipeline names none (image:)
  --cpus N  --memory SIZE  --pids N  --disk SIZE
                             each build container's limits, and the most a pipeline's limits get
                             (SIZE: 512m, 4g; MiB when bare)
  --container-user UID:GID   who steps run as when the runner is root on a rootful engine
                             (default 1000:1000; otherwise the runner's own user)
  --once                     run one build, then stop (exit 0): a runner in a throwaway VM

With the host executor, build steps run as the runner's OS user. On the daemon's host, run the runner as another user
(e.g. sudo -u roost-runner roost runner): it refuses to start as the daemon's own user or as root
there, since build code could then read Roost's database and secret key (docs/runners.md).
  ${UNSAFE_FLAG}   start anyway, warning in its log and in every build log;
                             for tests and single-user trials only

While Roost cannot be reached, the runner says so once and keeps retrying with backoff.
On SIGTERM/SIGINT it stops within a second or two, also while retrying, and says "runner stopped":
a job it has not started is handed back (queued again), a running job is canceled and finished
as canceled.
Exit 2 on bad configuration or the same-user refusal, 1 when the daemon refuses the runner.`;

export async function runnerMain(argv: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  let flags;
  try {
    flags = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        help: { type: "boolean", short: "h" },
        env: { type: "string", multiple: true },
        [UNSAFE_FLAG.slice(2)]: { type: "boolean" },
        executor: { type: "string" },
        engine: { type: "string" },
        image: { type: "string" },
        cpus: { type: "string" },
        memory: { type: "string" },
        pids: { type: "string" },
        disk: { type: "string" },
        "container-user": { type: "string" },
        once: { type: "boolean" },
      },
    }).values;
  } catch (error) {
    process.stderr.write(`roost runner: ${(error as Error).message.split("\n")[0]} (see roost runner --help)\n`);
    return 2;
  }
  if (flags.help) {
    process.stdout.write(RUNNER_HELP + "\n");
    return 0;
  }
  const settings = readSettings(env, (flags.env as string[] | undefined) ?? []);
  if (typeof settings === "string") {
    process.stderr.write(`roost runner: ${settings} (see roost runner --help)\n`);
    return 2;
  }
  const executor = await readExecutor(flags as ExecutorFlags);
  if (typeof executor === "string") {
    process.stderr.write(`roost runner: ${executor} (see roost runner --help)\n`);
    return 2;
  }
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    await runRunner({
      ...settings,
      log: (msg, fields) => process.stderr.write(JSON.stringify({ time: new Date().toISOString(), msg, ...fields }) + "\n"),
      stop: stop.signal,
      executor,
      once: flags.once === true,
      unsafeAllowSameUser: flags[UNSAFE_FLAG.slice(2)] === true,
    });
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return error instanceof SameUserRefusal ? 2 : error instanceof RunnerRefused ? 1 : 1;
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
  }
  return 0;
}

type Settings = Pick<
  import("./agent.ts").RunnerOptions,
  | "url"
  | "runnerId"
  | "token"
  | "workDir"
  | "flutterSdks"
  | "flutterGitUrl"
  | "flutterGitUrlSet"
  | "cacheMaxBytes"
  | "labels"
  | "graceMs"
  | "stepEnv"
  | "publish"
  | "publishEndpoints"
>;

/** The runner's environment and its --env names, checked; a sentence saying what is wrong otherwise. */
export function readSettings(env: Record<string, string | undefined>, envFlags: string[] = []): Settings | string {
  const url = parseRoostUrl(env.ROOST_URL ?? "http://127.0.0.1:8080");
  if (url === null) return `ROOST_URL is not an http:// or https:// URL: ${JSON.stringify(env.ROOST_URL)}`;
  const runnerId = env.ROOST_RUNNER_ID;
  const token = env.ROOST_RUNNER_TOKEN;
  if (!runnerId || !token) return "ROOST_RUNNER_ID and ROOST_RUNNER_TOKEN are required";
  const grace = Number(env.ROOST_RUNNER_GRACE_SECONDS ?? "10");
  if (!Number.isFinite(grace) || grace < 0) return `ROOST_RUNNER_GRACE_SECONDS is not a number of seconds: ${JSON.stringify(env.ROOST_RUNNER_GRACE_SECONDS)}`;
  const cacheMb = Number(env.ROOST_CACHE_MAX_MB ?? "10240");
  if (!Number.isFinite(cacheMb) || cacheMb < 0) return `ROOST_CACHE_MAX_MB is not a number of MiB: ${JSON.stringify(env.ROOST_CACHE_MAX_MB)}`;
  const workDir = resolve(env.ROOST_RUNNER_WORKDIR ?? "./runner-work");
  const extra = [...envFlags, ...(env.ROOST_RUNNER_ENV ?? "").split(/[\s,]+/).filter(Boolean)];
  const problem = extra.map(passedEnvProblem).find((p) => p !== null);
  if (problem) return problem;
  const publish = (env.ROOST_RUNNER_PUBLISH ?? "true").toLowerCase();
  if (publish !== "true" && publish !== "false") return `ROOST_RUNNER_PUBLISH is true or false, not ${JSON.stringify(env.ROOST_RUNNER_PUBLISH)}`;
  return {
    url,
    runnerId,
    token,
    workDir,
    flutterSdks: resolve(workDir, env.ROOST_FLUTTER_SDKS ?? "flutter"),
    flutterGitUrl: env.ROOST_FLUTTER_GIT_URL || DEFAULT_FLUTTER_GIT_URL,
    flutterGitUrlSet: Boolean(env.ROOST_FLUTTER_GIT_URL),
    cacheMaxBytes: cacheMb * 1024 * 1024,
    labels: (env.ROOST_RUNNER_LABELS ?? "")
      .split(",")
      .map((l) => l.trim())
      .filter(Boolean),
    graceMs: grace * 1000,
    stepEnv: { PATH: env.PATH ?? "/usr/bin:/bin", HOME: env.HOME ?? "/tmp", LANG: env.LANG ?? "C.UTF-8", ...pickPassedEnv(env, passedEnvNames(extra)) },
    publish: publish === "true",
    publishEndpoints: publishEndpointsFrom(env),
  };
}

interface ExecutorFlags {
  executor?: string;
  engine?: string;
  image?: string;
  cpus?: string;
  memory?: string;
  pids?: string;
  disk?: string;
  "container-user"?: string;
}

/** The executor the flags ask for, its engine found; a sentence saying what is wrong otherwise. */
export async function readExecutor(f: ExecutorFlags): Promise<ExecutorSettings | string> {
  const kind = f.executor ?? "host";
  if (kind !== "host" && kind !== "container") return `--executor is host or container, not ${JSON.stringify(kind)}`;
  const containerOnly = (["engine", "image", "cpus", "memory", "pids", "disk", "container-user"] as const).filter((k) => f[k] !== undefined);
  if (kind === "host") return containerOnly.length ? `--${containerOnly[0]} is for --executor container` : { kind: "host" };
  if (f.engine !== undefined && !ENGINES.includes(f.engine as EngineName)) return `--engine is podman or docker, not ${JSON.stringify(f.engine)}`;
  const number = (name: string, text: string | undefined, integer: boolean): number | null | string => {
    if (text === undefined) return null;
    const n = Number(text);
    return Number.isFinite(n) && n > 0 && (!integer || Number.isInteger(n))
      ? n
      : `--${name} is not a ${integer ? "whole " : ""}number above 0: ${JSON.stringify(text)}`;
  };
  const size = (name: string, text: string | undefined): number | null | string =>
    text === undefined ? null : (parseMebibytes(text) ?? `--${name} is not a size like 512m or 4g: ${JSON.stringify(text)}`);
  const limits = {
    cpus: number("cpus", f.cpus, false),
    memory_mb: size("memory", f.memory),
    pids: number("pids", f.pids, true),
    disk_mb: size("disk", f.disk),
  };
  const bad = Object.values(limits).find((v) => typeof v === "string");
  if (typeof bad === "string") return bad;
  const user = /^(\d+):(\d+)$/.exec(f["container-user"] ?? "1000:1000");
  if (!user || Number(user[1]) === 0) return `--container-user is UID:GID of a user other than root, not ${JSON.stringify(f["container-user"])}`;
  const engine = await detectEngine(f.engine as EngineName | undefined);
  if (typeof engine === "string") return engine;
  return { kind: "container", engine, image: f.image ?? null, limits: limits as Limits, user: { uid: Number(user[1]), gid: Number(user[2]) } };
}

/** Words in lines of at most `width` characters, each line indented. */
function wrapWords(words: readonly string[], indent: string, width: number): string {
  const lines: string[] = [];
  for (const word of words) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(indent + word);
  }
  return lines.join("\n");
}

/** The daemon's base URL without a trailing slash, or null when it is not an http(s) URL with a host. */
export function parseRoostUrl(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || !url.hostname || url.search || url.hash || url.username || url.password) return null;
  return url.href.replace(/\/+$/, "");
}
