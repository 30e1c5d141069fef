// The commands a user (not an operator) runs against a Roost instance over its API, with an API
// token: `roost project …`, `roost pipeline …`, `roost build …` (docs/cli.md). Human output by
// default, one JSON document (or JSON lines while following a log) with --json; the exit code says
// how a followed build ended, so `roost build start … --follow` works as a step of a script.
import { BUILD_STATUSES } from "../../builds/state-machine.ts";
import { UsageError, parseCommandArgs, type OptionSpec } from "../args.ts";
import { Api, CommandFailure, EXIT, refusal } from "./api.ts";
import { configPath, resolveRemote } from "./config.ts";
import { downloadArtifact, targetsFor } from "./download.ts";
import { followBuild, type LogLine } from "./follow.ts";
import type { Artifact, ArtifactList, Build, BuildList, OneBuild, OneDeployment, PipelineList, ProjectList } from "./resources.ts";

import { CLIENT_GROUPS } from "./groups.ts";

export { CLIENT_GROUPS };

const CONNECTION = `Roost and the token come from ROOST_URL and ROOST_TOKEN (an API token, roost_pat_…, from
POST /v1/api-tokens or the web app's account page), else from a JSON file
{"url": "https://ci.example.com", "token": "roost_pat_…"} at $ROOST_CONFIG or
$XDG_CONFIG_HOME/roost/config.json (default ~/.config/roost/config.json), which must be mode 0600.`;

const EXIT_CODES = `Exit codes: 0 done (a followed build succeeded) · 1 the followed build failed · 2 usage or
configuration error · 3 the followed build was canceled · 4 Roost refused the request, or what was
asked for does not exist · 5 Roost unreachable, or the log stream lost for good · 6 an artifact's
checksum does not match (nothing written).`;

type Json = { json?: boolean };

interface Action {
  usage: string;
  help: string;
  options: OptionSpec;
  positionals: string[];
  run(api: Api, values: Record<string, string | boolean | undefined>, positionals: string[]): Promise<number>;
}

const JSON_OPTION: OptionSpec = { json: { type: "boolean" } };

const ACTIONS: Record<(typeof CLIENT_GROUPS)[number], Record<string, Action>> = {
  project: {
    list: {
      usage: "roost project list [--search TEXT] [--json]",
      help: "The projects you can see: id, name, repository, default branch, your role. --search matches the name or repository.",
      options: { ...JSON_OPTION, search: { type: "string" } },
      positionals: [],
      async run(api, values) {
        const query = values.search ? `&q=${encodeURIComponent(String(values.search))}` : "";
        const body = await api.json<ProjectList>("GET", `/v1/projects?limit=200${query}`);
        if (values.json) return printJson(body);
        table(
          ["ID", "NAME", "REPOSITORY", "BRANCH", "ROLE"],
          body.projects.map((p) => [p.id, p.name, p.repository_full_name, p.default_branch, p.current_user_role ?? ""]),
        );
        return EXIT.succeeded;
      },
    },
  },
  pipeline: {
    list: {
      usage: "roost pipeline list <project> [--json]",
      help: "A project's pipelines: id, name, enabled, platforms. <project> is its id, name or repository (owner/name).",
      options: JSON_OPTION,
      positionals: ["<project>"],
      async run(api, values, [projectRef]) {
        const project = await resolveProject(api, projectRef!);
        const body = await api.json<PipelineList>("GET", `/v1/projects/${enc(project.id)}/pipelines`);
        if (values.json) return printJson(body);
        table(
          ["ID", "NAME", "ENABLED", "PLATFORMS"],
          body.pipelines.map((p) => [p.id, p.name, p.enabled ? "yes" : "no", p.execution_config.platforms.join(",") || "none"]),
        );
        return EXIT.succeeded;
      },
    },
  },
  build: {
    list: {
      usage: "roost build list <project> [--pipeline P] [--status S] [--branch B] [--limit N] [--json]",
      help: `A project's builds, newest first (default 20). --pipeline takes a pipeline's id or name; --status one of ${BUILD_STATUSES.join(", ")}.`,
      options: { ...JSON_OPTION, pipeline: { type: "string" }, status: { type: "string" }, branch: { type: "string" }, limit: { type: "string" } },
      positionals: ["<project>"],
      async run(api, values, [projectRef]) {
        const status = values.status as string | undefined;
        if (status !== undefined && !(BUILD_STATUSES as readonly string[]).includes(status)) {
          throw new UsageError(`roost build list: --status must be one of ${BUILD_STATUSES.join(", ")}, not '${status}'`);
        }
        const limit = (values.limit as string | undefined) ?? "20";
        if (!/^\d+$/.test(limit) || Number(limit) < 1 || Number(limit) > 200)
          throw new UsageError(`roost build list: --limit must be a whole number from 1 to 200, not '${limit}'`);
        const project = await resolveProject(api, projectRef!);
        const query = new URLSearchParams({ limit });
        if (status) query.set("status", status);
        if (values.branch) query.set("branch", String(values.branch));
        const path = values.pipeline
          ? `/v1/pipelines/${enc((await resolvePipeline(api, project.id, String(values.pipeline))).id)}/builds`
          : `/v1/projects/${enc(project.id)}/builds`;
        const body = await api.json<BuildList>("GET", `${path}?${query}`);
        if (values.json) return printJson(body);
        table(
          ["ID", "#", "STATUS", "BRANCH", "COMMIT", "TRIGGER", "CREATED", "DURATION"],
          body.builds.map((b) => [b.id, String(b.build_number), b.status, b.branch, b.commit_sha.slice(0, 7), b.trigger_type, time(b.created_at), duration(b)]),
        );
        return EXIT.succeeded;
      },
    },
    show: {
      usage: "roost build show <build> [--json]",
      help: "One build: status, branch, commit, trigger, times, failure reason and its steps.",
      options: JSON_OPTION,
      positionals: ["<build>"],
      async run(api, values, [buildId]) {
        const body = await api.json<OneBuild>("GET", `/v1/builds/${enc(buildId!)}`);
        if (values.json) return printJson(body);
        const b = body.build;
        const rows: [string, string][] = [
          ["build", `#${b.build_number} ${b.id}`],
          ["status", b.status + (b.exit_code === null ? "" : ` (exit code ${b.exit_code})`)],
          ["pipeline", `${b.config_snapshot.pipeline_name} ${b.pipeline_id}`],
          ["branch", b.branch],
          ["commit", b.commit_sha],
          ["trigger", `${b.trigger_type} by ${b.trigger_actor || "?"}${b.source_build_id ? ` (re-run of ${b.source_build_id})` : ""}`],
          ["created", time(b.created_at)],
          ["duration", duration(b)],
        ];
        if (b.failure_reason) rows.push(["failure", b.failure_reason]);
        if (b.runner_policy_block_reason) rows.push(["waiting", b.runner_policy_block_reason]);
        out(rows.map(([k, v]) => `${k.padEnd(9)}${v}`).join("\n") + "\n");
        if (b.step_results.length > 0) {
          out("\n");
          table(
            ["STEP", "STATUS", "EXIT", "DURATION"],
            b.step_results.map((s) => [s.name, s.status, s.exit_code === null ? "" : String(s.exit_code), `${(s.duration_ms / 1000).toFixed(1)} s`]),
          );
        }
        return EXIT.succeeded;
      },
    },
    start: {
      usage: "roost build start <project> --pipeline P [--branch B] [--commit SHA] [--follow] [--json]",
      help: `Starts a build of one pipeline (its id or name). The branch defaults to the project's default branch,
the commit to the branch's head at the source host. With --follow, prints the log live and exits with the
build's result (0 succeeded, 1 failed, 3 canceled).`,
      options: { ...JSON_OPTION, pipeline: { type: "string" }, branch: { type: "string" }, commit: { type: "string" }, follow: { type: "boolean" } },
      positionals: ["<project>"],
      async run(api, values, [projectRef]) {
        if (values.pipeline === undefined) throw new UsageError("roost build start: missing --pipeline; see 'roost build start --help'");
        const project = await resolveProject(api, projectRef!);
        const pipeline = await resolvePipeline(api, project.id, String(values.pipeline));
        const body = await api.json<OneBuild>("POST", `/v1/projects/${enc(project.id)}/builds`, {
          pipeline_id: pipeline.id,
          ...(values.branch === undefined ? {} : { branch: values.branch }),
          ...(values.commit === undefined ? {} : { commit_sha: values.commit }),
        });
        return started(api, body.build, values);
      },
    },
    follow: {
      usage: "roost build follow <build> [--json]",
      help: `Prints the build's log live (what was logged so far first), then exits with its result:
0 succeeded, 1 failed, 3 canceled. A dropped connection is resumed after the last line seen, with no
line lost or repeated. With --json, one JSON object a line: {"event":"build"}, then "log", "status"
and "truncated" events as they come, then {"event":"end","build":{…}}.`,
      options: JSON_OPTION,
      positionals: ["<build>"],
      async run(api, values, [buildId]) {
        const { build } = await api.json<OneBuild>("GET", `/v1/builds/${enc(buildId!)}`);
        if (values.json) printLine({ event: "build", build });
        return follow(api, build, values);
      },
    },
    cancel: {
      usage: "roost build cancel <build> [--json]",
      help: "Cancels a queued or running build (a finished one is refused, exit 4). A runner working on it stops the build's processes.",
      options: JSON_OPTION,
      positionals: ["<build>"],
      async run(api, values, [buildId]) {
        const body = await api.json<OneBuild>("POST", `/v1/builds/${enc(buildId!)}/cancel`);
        if (values.json) return printJson(body);
        out(`build #${body.build.build_number} ${body.build.id}: ${body.build.status}\n`);
        return EXIT.succeeded;
      },
    },
    rerun: {
      usage: "roost build rerun <build> [--follow] [--json]",
      help: "Starts a new build with the same commit, branch and configuration as <build>. --follow as for 'roost build start'.",
      options: { ...JSON_OPTION, follow: { type: "boolean" } },
      positionals: ["<build>"],
      async run(api, values, [buildId]) {
        const body = await api.json<OneBuild>("POST", `/v1/builds/${enc(buildId!)}/rerun`);
        return started(api, body.build, values);
      },
    },
    publish: {
      usage: "roost build publish <build> --environment E [--publisher P] [--track T] [--rollout FRACTION] [--json]",
      help: `Publishes an earlier successful build's artifacts again, to environment E, without a rebuild
(promotion, docs/publishing.md): the same bytes, checked by SHA-256. --publisher names one of the
build's publishers (needed when it has several); --track and --rollout (0-1, a staged rollout) set a
Google Play publisher's track and user fraction. The environment's approval and allowed refs apply:
the deployment may wait for an approver. Prints the deployment; --json prints {"deployment": {…}}.`,
      options: { ...JSON_OPTION, environment: { type: "string" }, publisher: { type: "string" }, track: { type: "string" }, rollout: { type: "string" } },
      positionals: ["<build>"],
      async run(api, values, [buildId]) {
        if (values.environment === undefined) throw new UsageError("roost build publish: missing --environment; see 'roost build publish --help'");
        const rollout = values.rollout as string | undefined;
        if (rollout !== undefined && !(/^(0?\.\d+|1(\.0*)?)$/.test(rollout) && Number(rollout) > 0))
          throw new UsageError(`roost build publish: --rollout must be a fraction above 0 and at most 1 (0.1 for 10 %), not '${rollout}'`);
        const { build } = await api.json<OneBuild>("GET", `/v1/builds/${enc(buildId!)}`);
        const publisher = choosePublisher(build, values.publisher as string | undefined);
        const overrides = {
          ...(values.track === undefined ? {} : { track: values.track }),
          ...(rollout === undefined || Number(rollout) === 1 ? {} : { user_fraction: Number(rollout) }),
        };
        const body = await api.json<OneDeployment>("POST", `/v1/builds/${enc(build.id)}/publish`, { publisher, environment: values.environment, overrides });
        if (values.json) return printJson(body);
        const d = body.deployment;
        const next =
          d.status === "waiting_approval"
            ? `waiting for approval (Approve on the build's page, or POST /v1/deployments/${d.id}/approve)`
            : d.status === "approved"
              ? "queued for a runner"
              : d.status;
        out(`deployment ${d.id}: build #${d.build_number} ${d.publisher} to ${d.environment} (${d.target}): ${next}\n`);
        return EXIT.succeeded;
      },
    },
    artifacts: {
      usage: "roost build artifacts <build> [--json]",
      help: "The build's artifacts: id, size, SHA-256 and path.",
      options: JSON_OPTION,
      positionals: ["<build>"],
      async run(api, values, [buildId]) {
        const body = await api.json<ArtifactList>("GET", `/v1/builds/${enc(buildId!)}/artifacts`);
        if (values.json) return printJson(body);
        table(
          ["ID", "SIZE", "SHA256", "PATH"],
          body.artifacts.map((a: Artifact) => [a.id, String(a.size), a.sha256.slice(0, 12), a.path]),
        );
        return EXIT.succeeded;
      },
    },
    download: {
      usage: "roost build download <build> [--match GLOB] [--dir DIR] [--keep-paths] [--json]",
      help: `Downloads the build's artifacts (those whose path matches --match, e.g. '**/*.apk') into DIR (default
the current directory) under their file names, or their whole paths with --keep-paths. Each file is
streamed to disk and its SHA-256 compared with the one Roost recorded; a mismatch exits 6 and leaves
no file. An existing file of the same name is replaced once the new one checks out. Exit 4 when
nothing matches. --json prints {"artifacts":[{…, "file": "/abs/path"}]}.`,
      options: { ...JSON_OPTION, match: { type: "string" }, dir: { type: "string" }, "keep-paths": { type: "boolean" } },
      positionals: ["<build>"],
      async run(api, values, [buildId]) {
        const listed = (await api.json<ArtifactList>("GET", `/v1/builds/${enc(buildId!)}/artifacts`)).artifacts;
        const glob = values.match === undefined ? null : new Bun.Glob(String(values.match));
        const chosen = glob ? listed.filter((a) => glob.match(a.path)) : listed;
        if (chosen.length === 0) {
          throw new CommandFailure(
            `roost: build ${buildId} has no artifacts${glob ? ` matching '${values.match}' (it has ${listed.length})` : ""}`,
            EXIT.refused,
          );
        }
        const targets = targetsFor(chosen, String(values.dir ?? "."), values["keep-paths"] === true);
        const done: (Artifact & { file: string })[] = [];
        for (const [i, artifact] of chosen.entries()) {
          await downloadArtifact(api, artifact, targets[i]!);
          done.push({ ...artifact, file: targets[i]! });
          if (!values.json) out(`${targets[i]}  ${artifact.size} bytes  sha256 ${artifact.sha256} ok\n`);
        }
        if (values.json) printJson({ artifacts: done });
        return EXIT.succeeded;
      },
    },
  },
};

const GROUP_HELP: Record<(typeof CLIENT_GROUPS)[number], string> = {
  project: "roost project: the projects you can see on a Roost instance.",
  pipeline: "roost pipeline: a project's pipelines.",
  build: "roost build: start, follow, cancel and re-run builds, download their artifacts, and publish them again (promotion).",
};

/** `roost <group> …` for the user commands; the exit code (usage errors throw UsageError, exit 2). */
export async function runClientCommand(group: (typeof CLIENT_GROUPS)[number], args: string[]): Promise<number> {
  const actions = ACTIONS[group];
  const names = Object.keys(actions);
  const [name, ...rest] = args;
  const wantsHelp = args.includes("--help") || args.includes("-h");
  if (name === undefined || name.startsWith("-")) {
    if (wantsHelp) return help(groupHelp(group));
    throw new UsageError(`roost ${group}: missing action (${names.join(", ")}); see 'roost ${group} --help'`);
  }
  const action = actions[name];
  if (!action) throw new UsageError(`roost ${group}: unknown action '${name}' (${names.join(", ")}); see 'roost ${group} --help'`);
  if (wantsHelp) return help(`Usage: ${action.usage}\n\n${action.help}\n\n${CONNECTION}\n\n${EXIT_CODES}`);
  const { values, positionals } = parseCommandArgs(`roost ${group} ${name}`, rest, action.options, action.positionals);
  const api = new Api(resolveRemote(process.env));
  try {
    return await action.run(api, values, positionals);
  } catch (error) {
    if (!(error instanceof CommandFailure)) throw error;
    process.stderr.write(error.message + "\n");
    return error.exitCode;
  }
}

function groupHelp(group: (typeof CLIENT_GROUPS)[number]): string {
  const usages = Object.values(ACTIONS[group]).map((a) => `  ${a.usage}`);
  return `${GROUP_HELP[group]}\n\n${usages.join("\n")}\n\nRun 'roost ${group} <action> --help' for an action's details. The config file here: ${configPath(process.env)}.\n\n${CONNECTION}\n\n${EXIT_CODES}`;
}

function help(text: string): number {
  out(text + "\n");
  return EXIT.succeeded;
}

/** After start or re-run: the new build, and its log with --follow. */
async function started(api: Api, build: Build, values: Json & { follow?: unknown }): Promise<number> {
  if (!values.follow) {
    if (values.json) return printJson({ build });
    out(`build #${build.build_number} ${build.id}: ${build.status}\n`);
    return EXIT.succeeded;
  }
  if (values.json) printLine({ event: "build", build });
  else process.stderr.write(`roost: started build #${build.build_number} ${build.id}\n`);
  return follow(api, build, values);
}

/** Follows a build's log to its end; the exit code of its result. */
async function follow(api: Api, build: Build, values: Json): Promise<number> {
  let step: string | null = null;
  let status: string = build.status;
  const ended = await followBuild(api, build.id, {
    log(line: LogLine) {
      if (values.json) return printLine({ event: "log", ...line });
      if (line.step && line.step !== step) out(`==> ${line.step}\n`);
      step = line.step || step;
      out(line.text + "\n");
    },
    status(s) {
      if (values.json) return printLine({ event: "status", ...s });
      if (s.status !== status) process.stderr.write(`roost: build #${build.build_number} ${s.status}\n`);
      status = s.status;
    },
    truncated(cut) {
      if (values.json) return printLine({ event: "truncated", ...cut });
      out(`[roost] ${cut.text}\n`);
    },
    reconnecting(attempt, reason) {
      process.stderr.write(`roost: the log stream dropped (${reason}); reconnecting (attempt ${attempt})\n`);
    },
  });
  // The stream already told the result; the build's other final fields are a courtesy that a
  // connection lost just now must not turn into exit 5.
  const final: Build = await api.json<OneBuild>("GET", `/v1/builds/${enc(build.id)}`).then(
    (body) => body.build,
    () => ({ ...build, status: ended.status, exit_code: ended.exit_code, failure_reason: null }),
  );
  if (values.json) printLine({ event: "end", build: final });
  else {
    const why = final.status === "failed" && final.failure_reason ? `: ${final.failure_reason}` : "";
    process.stderr.write(`roost: build #${final.build_number} ${final.status}${why} (${duration(final)})\n`);
  }
  return ended.status === "succeeded" ? EXIT.succeeded : ended.status === "canceled" ? EXIT.canceled : EXIT.failed;
}

/**
 * The publisher a promotion names: the one asked for, or the build's only one. Its name is the
 * API's (lib/publishing/publishers.ts publisherName), restated here so the CLI loads no zod.
 */
function choosePublisher(build: Build, wanted: string | undefined): string {
  const names = (build.config_snapshot.execution_config.publish ?? []).map((p) =>
    typeof p.name === "string" ? p.name : `${p.type === "github_release" ? "host_release" : p.type}-${p.environment}`,
  );
  if (names.length === 0)
    throw new CommandFailure(`roost: build #${build.build_number} has no publishers (its pipeline's publish: list was empty)`, EXIT.refused);
  if (wanted !== undefined) return wanted;
  if (names.length === 1) return names[0]!;
  throw new UsageError(`roost build publish: build #${build.build_number} has several publishers (${names.join(", ")}); name one with --publisher`);
}

/** A project by id, name or repository full name among those the caller sees. */
async function resolveProject(api: Api, ref: string): Promise<{ id: string; name: string }> {
  const direct = await api.fetch(`/v1/projects/${enc(ref)}`);
  if (direct.ok) return ((await direct.json()) as { project: { id: string; name: string } }).project;
  await direct.body?.cancel();
  if (direct.status !== 404 && direct.status !== 400) throw await refusal(direct, `GET /v1/projects/${ref}`);
  const { projects } = await api.json<ProjectList>("GET", `/v1/projects?limit=200&q=${encodeURIComponent(ref)}`);
  const matches = projects.filter((p) => p.name === ref || p.repository_full_name === ref);
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0)
    throw new CommandFailure(`roost: no project '${ref}' among those you can see (by id, name or repository); see 'roost project list'`, EXIT.refused);
  throw new CommandFailure(`roost: '${ref}' names ${matches.length} projects (${matches.map((p) => p.id).join(", ")}); give the id`, EXIT.refused);
}

async function resolvePipeline(api: Api, projectId: string, ref: string): Promise<{ id: string; name: string }> {
  const { pipelines } = await api.json<PipelineList>("GET", `/v1/projects/${enc(projectId)}/pipelines`);
  const match = pipelines.find((p) => p.id === ref) ?? pipelines.find((p) => p.name === ref);
  if (!match) throw new CommandFailure(`roost: the project has no pipeline '${ref}' (by id or name); see 'roost pipeline list <project>'`, EXIT.refused);
  return match;
}

const enc = encodeURIComponent;

function out(text: string): void {
  process.stdout.write(text);
}

function printJson(body: unknown): number {
  out(JSON.stringify(body, null, 2) + "\n");
  return EXIT.succeeded;
}

function printLine(body: unknown): void {
  out(JSON.stringify(body) + "\n");
}

function table(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd() + "\n";
  out(line(header) + rows.map(line).join(""));
}

function time(seconds: number): string {
  return new Date(seconds * 1000)
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, "Z");
}

function duration(b: { started_at: number | null; finished_at: number | null; status: string }): string {
  if (b.started_at === null) return b.status === "queued" ? "waiting" : "-";
  if (b.finished_at === null) return "running";
  const s = b.finished_at - b.started_at;
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}
