// The world most end-to-end tests build in: a real `roost serve` whose owner is logged in (the
// first loopback login makes the owner, docs/access.md "Local Only"), GitHub connected through the
// host-API stand-in, a project on the stand-in's repository; the calls those tests make on it
// (pipelines, builds, a build's end and log) and the `roost runner` processes that build.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Subprocess } from "bun";
import { sign } from "@octokit/webhooks-methods";
import { BUN, REPO_ROOT, ROOST, http, startDaemon, type Daemon, type DaemonOptions } from "./daemon.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { pollUntil } from "./poll.ts";

/** The webhook secret of the GitHub integration these tests connect. */
export const WEBHOOK_SECRET = "0123456789abcdef-secret";
/** git with a committer, for the test repositories. */
export const GIT = "git -c user.email=ci@example.test -c user.name=CI";

/** `cmd` in bash; its trimmed stdout, or an error with its exit code and stderr. */
export async function sh(cmd: string, cwd: string, env?: Record<string, string>): Promise<string> {
  const p = Bun.spawn(["bash", "-c", cmd], { cwd, env, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${cmd}: exit ${code}: ${err}`);
  return out.trim();
}

/** A git repository at `dir` with `files` (path → text) written in it and all it holds committed on main; the commit. */
export async function commitRepository(dir: string, files: Record<string, string> = {}, message = "first commit"): Promise<string> {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  await sh(`git init -q -b main && ${GIT} add . && ${GIT} commit -q -m '${message}'`, dir);
  return sh("git rev-parse HEAD", dir);
}

/** What a `flutter build` of the stand-ins writes: an .apk naming the commit, where Flutter puts one. */
export const WRITE_APK = [
  "mkdir -p build/app/outputs/flutter-apk",
  `printf 'fake apk for %s' "$ROOST_COMMIT_SHA" > build/app/outputs/flutter-apk/app-release.apk`,
];

/** A `flutter` in `dir` (made here) that prints like flutter, and on `flutter build` runs `onBuild`; `dir`, for a runner's PATH. */
export function writeFlutterStandIn(dir: string, onBuild: string[] = []): string {
  mkdirSync(dir, { recursive: true });
  const build = onBuild.length ? `if [ "$1" = build ]; then\n${onBuild.map((l) => `  ${l}\n`).join("")}fi\n` : "";
  writeFileSync(join(dir, "flutter"), `#!/bin/bash\n# A stand-in for flutter in tests.\necho "Flutter stand-in (tests): flutter $*"\n${build}`, {
    mode: 0o755,
  });
  return dir;
}

export const isFinished = (b: { status: string }) => ["succeeded", "failed", "canceled"].includes(b.status);

/** The first loopback login, which makes the owner; its session token. */
export async function loginOwner(url: string): Promise<string> {
  const res = await http(url, "POST", "/v1/auth/local/login", { body: { email: "owner@example.test" } });
  if (res.status !== 200) throw new Error(`the owner's login failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.session_token;
}

/** The body of `POST /v1/integrations` that connects the host-API stand-in's GitHub App as integration "gh". */
export function githubIntegration(host: HostApiStandIn, webhookSecret = WEBHOOK_SECRET): Record<string, unknown> {
  return {
    provider: "github",
    name: "gh",
    api_url: host.url,
    app_id: host.github.appId,
    installation_id: host.github.installationId,
    private_key: host.github.privateKeyPem,
    webhook_secret: webhookSecret,
  };
}

/**
 * GitHub connected through the host-API stand-in, and a project on the first repository it lists;
 * the project. `url` is the daemon, or where several share one database, the daemon of each call
 * in turn: the integration, the repository list, the project.
 */
export async function createGithubProject(
  url: string | [string, string, string],
  owner: string,
  host: HostApiStandIn,
  webhookSecret = WEBHOOK_SECRET,
): Promise<any> {
  const [integrationUrl, listUrl, projectUrl] = typeof url === "string" ? [url, url, url] : url;
  const integration = await http(integrationUrl, "POST", "/v1/integrations", { token: owner, body: githubIntegration(host, webhookSecret) });
  if (integration.status !== 201) throw new Error(`integration failed: ${JSON.stringify(integration.body)}`);
  const listed = await http(listUrl, "GET", "/v1/integration-repositories", { token: owner });
  const repository = listed.body.repositories?.[0];
  if (!repository) throw new Error(`no repository listed: ${JSON.stringify(listed.body)}`);
  const project = await http(projectUrl, "POST", "/v1/projects", { token: owner, body: { repository_id: repository.id } });
  if (project.status !== 201) throw new Error(`project failed: ${JSON.stringify(project.body)}`);
  return project.body.project;
}

export interface RegisteredRunner {
  id: string;
  token: string;
}

/** The calls the e2e tests make as the owner of one project. */
export interface ProjectClient {
  url: string;
  owner: string;
  projectId: string;
  registerRunner(body?: Record<string, unknown>): Promise<RegisteredRunner>;
  /** A pipeline with a fresh name unless `body` names it; its id. */
  createPipeline(body?: Record<string, unknown>): Promise<string>;
  /** A build of the pipeline at `commitSha` (with `fields`, such as its branch); its id. */
  queueBuild(pipelineId: string, commitSha: string, fields?: Record<string, unknown>): Promise<string>;
  buildOf(buildId: string): Promise<any>;
  /** Polls the build until `predicate` holds (by default: it finished); the build. */
  waitForBuild(buildId: string, predicate?: (b: any) => boolean, timeoutMs?: number, intervalMs?: number): Promise<any>;
  /** The build's log as plain text. */
  buildLog(buildId: string): Promise<string>;
}

export function projectClient(url: string, owner: string, projectId: string): ProjectClient {
  const buildOf = async (buildId: string) => (await http(url, "GET", `/v1/builds/${buildId}`, { token: owner })).body.build;
  return {
    url,
    owner,
    projectId,
    async registerRunner(body = {}) {
      const res = await http(url, "POST", "/v1/runners", { token: owner, body: { name: `r-${crypto.randomUUID().slice(0, 6)}`, ...body } });
      if (res.status !== 201) throw new Error(`runner failed: ${JSON.stringify(res.body)}`);
      return { id: res.body.runner.id, token: res.body.token };
    },
    async createPipeline(body = {}) {
      const res = await http(url, "POST", `/v1/projects/${projectId}/pipelines`, {
        token: owner,
        body: { name: `p-${crypto.randomUUID()}`, ...body },
      });
      if (res.status !== 201) throw new Error(JSON.stringify(res.body));
      return res.body.pipeline.id;
    },
    async queueBuild(pipelineId, commitSha, fields = {}) {
      const res = await http(url, "POST", `/v1/projects/${projectId}/builds`, {
        token: owner,
        body: { pipeline_id: pipelineId, commit_sha: commitSha, ...fields },
      });
      if (res.status !== 201) throw new Error(JSON.stringify(res.body));
      return res.body.build.id;
    },
    buildOf,
    waitForBuild(buildId, predicate = isFinished, timeoutMs = 30_000, intervalMs = 100) {
      return pollUntil(`the awaited state of build ${buildId}`, () => buildOf(buildId), predicate, timeoutMs, intervalMs);
    },
    buildLog(buildId) {
      return fetch(`${url}/v1/builds/${buildId}/logs`, { headers: { authorization: `Bearer ${owner}`, accept: "text/plain" } }).then((r) => r.text());
    },
  };
}

export interface GithubProject extends ProjectClient {
  daemon: Daemon;
  host: HostApiStandIn;
  /** A recorded GitHub webhook payload (tests/fixtures/webhooks/github/<name>) retargeted at the project's repository and the stand-in's installation. */
  githubPayload(name: string): any;
  /** `payload` delivered as GitHub's `event`, signed with the integration's secret; the one build it started (or an error with the delivery's reason). */
  deliverWebhook(event: string, payload: unknown): Promise<string>;
  /** A tag pushed at `sha` as GitHub sends it (with `message` as its head commit's, when given); the build it started. */
  pushTag(tag: string, sha: string, message?: string): Promise<string>;
  /** The `roost runner` started with the project (its `runner` option), or null. */
  hostRunner: RunnerProcess | null;
  /** The runner killed, the daemon and the stand-in stopped. */
  stop(): Promise<void>;
}

/** A daemon (`daemon` options), the host-API stand-in listing `repository` (private, on main), the owner logged in and a project on it. */
export async function startGithubProject(options: {
  repository: { id: number; full_name: string; clone_url?: string };
  daemon?: DaemonOptions;
  webhookSecret?: string;
  /** A runner registered as `name` and started on this host (spawnHostRunner) with the other options. */
  runner?: { name: string } & HostRunnerOptions;
}): Promise<GithubProject> {
  const daemon = await startDaemon(options.daemon);
  const host = await startHostApiStandIn();
  host.github.repos.push({ default_branch: "main", private: true, ...options.repository });
  const owner = await loginOwner(daemon.url);
  const webhookSecret = options.webhookSecret ?? WEBHOOK_SECRET;
  const project = await createGithubProject(daemon.url, owner, host, webhookSecret);
  const { id, full_name } = options.repository;
  const client = projectClient(daemon.url, owner, project.id);
  let hostRunner: RunnerProcess | null = null;
  if (options.runner) {
    const { name, ...runnerOptions } = options.runner;
    hostRunner = spawnHostRunner(daemon.url, await client.registerRunner({ name }), runnerOptions);
  }
  const deliverWebhook = async (event: string, payload: unknown) => {
    const body = JSON.stringify(payload);
    const res = await fetch(`${daemon.url}/v1/webhooks/github`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": event,
        "x-github-delivery": crypto.randomUUID(),
        "x-hub-signature-256": await sign(webhookSecret, body),
      },
      body,
    });
    const answer = (await res.json()) as { builds?: { id: string }[]; delivery_id?: string };
    if (answer.builds?.length === 1) return answer.builds[0]!.id;
    const why = answer.delivery_id
      ? (await http(daemon.url, "GET", `/v1/webhook-deliveries/${answer.delivery_id}`, { token: owner })).body.delivery.reason
      : null;
    throw new Error(`the ${event} did not start one build: ${JSON.stringify(answer)} ${JSON.stringify(why)}`);
  };
  const githubPayload = (name: string) => {
    const payload = JSON.parse(readFileSync(join(REPO_ROOT, "tests/fixtures/webhooks/github", name), "utf8"));
    Object.assign(payload.repository, { id, full_name, name: full_name.split("/")[1], default_branch: "main" });
    payload.repository.owner.login = full_name.split("/")[0];
    if (payload.installation) payload.installation.id = Number(host.github.installationId);
    return payload;
  };
  return {
    ...client,
    daemon,
    host,
    githubPayload,
    deliverWebhook,
    pushTag(tag, sha, message) {
      const payload = githubPayload("push__tag_created.json");
      Object.assign(payload, { ref: `refs/tags/${tag}`, after: sha });
      Object.assign(payload.head_commit, { id: sha }, message === undefined ? {} : { message });
      return deliverWebhook("push", payload);
    },
    hostRunner,
    async stop() {
      hostRunner?.proc.kill("SIGKILL");
      await daemon.stop();
      await host.stop();
    },
  };
}

/** Speaks the runner protocol as a runner would: connects with `connect` (its capabilities, version) and claims the next job, which it answers. */
export async function claimJob(url: string, runner: RegisteredRunner, connect: Record<string, unknown>): Promise<any> {
  await http(url, "POST", `/v1/runners/${runner.id}/connect`, { token: runner.token, body: connect });
  const claimed = await http(url, "POST", `/v1/runners/${runner.id}/jobs/claim`, {
    token: runner.token,
    body: { claim_id: crypto.randomUUID(), wait_seconds: 0 },
  });
  if (claimed.status !== 201) throw new Error(`no job to claim: ${claimed.status} ${JSON.stringify(claimed.body)}`);
  return claimed.body.job;
}

/** `content` uploaded as the job's artifact at `path`, as the runner sends it (docs/runners.md "Artifacts"), with its SHA-256; the status and the JSON answered. */
export async function uploadArtifact(
  url: string,
  runner: RegisteredRunner,
  jobId: string,
  path: string,
  content: Uint8Array | string,
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}/v1/runners/${runner.id}/jobs/${jobId}/artifacts?path=${encodeURIComponent(path)}`, {
    method: "PUT",
    headers: {
      authorization: `Bearer ${runner.token}`,
      "content-type": "application/octet-stream",
      "x-roost-artifact-sha256": createHash("sha256").update(content).digest("hex"),
    },
    body: content,
  });
  return { status: res.status, body: await res.json() };
}

/** The variables that make `roost runner` the given registered runner of the daemon at `url`, working in `workDir`. */
export function runnerEnv(url: string, runner: RegisteredRunner, workDir: string): Record<string, string> {
  return { ROOST_URL: url, ROOST_RUNNER_ID: runner.id, ROOST_RUNNER_TOKEN: runner.token, ROOST_RUNNER_WORKDIR: workDir };
}

export interface RunnerProcess {
  proc: Subprocess;
  /** Its stderr, line by line, as it comes. */
  lines: string[];
  /** Resolves when its stderr is closed and every line is in `lines`. */
  done: Promise<void>;
}

/**
 * `roost runner` on this host, run by the tests' own user (--unsafe-allow-same-user, the
 * documented override, docs/runners.md): the registered `runner` of the daemon at `url`, with
 * HOME `home`, working in `home`/runner-work, `flutter` first found in `flutterDir`
 * (scripts/flutter-stand-in unless given), a grace of 1 s, no Flutter to download, and `env`.
 */
export interface HostRunnerOptions {
  home: string;
  flutterDir?: string;
  workDir?: string;
  env?: Record<string, string>;
  /** Runs it through another command: `host.run` of a test LAN's host (tests/support/netns.ts). */
  prefix?: string[];
}

export function spawnHostRunner(url: string, runner: RegisteredRunner, options: HostRunnerOptions): RunnerProcess {
  const { home, flutterDir = join(REPO_ROOT, "scripts/flutter-stand-in"), workDir = join(home, "runner-work") } = options;
  return spawnRunner(
    ["--unsafe-allow-same-user"],
    {
      ...runnerEnv(url, runner, workDir),
      PATH: `${flutterDir}:${process.env.PATH ?? "/usr/bin:/bin"}`,
      HOME: home,
      ROOST_RUNNER_GRACE_SECONDS: "1",
      ROOST_FLUTTER_GIT_URL: "file:///nonexistent/flutter.git",
      ...options.env,
    },
    options.prefix,
  );
}

/** `roost runner <args>` with only PATH (unless `env` sets it) and `env` in its environment; `prefix` runs it through another command (nsenter, setpriv). */
export function spawnRunner(args: string[], env: Record<string, string>, prefix: string[] = []): RunnerProcess {
  const proc = Bun.spawn([...prefix, BUN, ROOST, "runner", ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
    stdout: "ignore",
    stderr: "pipe",
  });
  const lines: string[] = [];
  return { proc, lines, done: collectLines(proc.stderr as ReadableStream<Uint8Array>, lines) };
}

/** Pushes each line of `stream` onto `lines` as it comes (the last one even without a newline). */
export async function collectLines(stream: ReadableStream<Uint8Array>, lines: string[]): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of stream) {
    buffer += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      lines.push(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
    }
  }
  if (buffer) lines.push(buffer);
}
