// A project's pipelines (docs/pipelines.md): where each comes from — the repository's pipeline
// file (roost.yaml) at the default branch's head, shown read-only with the line each pipeline is
// defined on, or the configuration in Roost, edited here — the file's problems and the last one a
// webhook delivery found. A pipeline the file defines has no edit form: the file overrides it.
import { useState } from "preact/hooks";
import { ApiFailure, del, get, patch, post } from "../api.ts";
import { FormError, LoadState, Notice, StatusBadge, SubmitOrCancel, TextAreaField, TextField, useField, useForm, useLoad } from "../components.tsx";
import { ago, dateTime } from "../format.ts";
import type { Pipeline, PipelineFile, Project } from "../types.ts";

type FileEntry = PipelineFile["files"][number];
/** Twelve characters, as the delivery log's sentences name a file's commit ("roost.yaml at 1a2b3c4d5e6f"). */
const fileCommit = (sha: string) => sha.slice(0, 12);
type FilePipeline = FileEntry["pipelines"][number];

/** Where a pipeline's definition comes from, in words, and whether editing it here has an effect. */
type Origin =
  | { kind: "file"; file: FileEntry; defined: FilePipeline }
  | { kind: "api"; path: string }
  | { kind: "not-in-file"; file: FileEntry }
  | { kind: "file-broken"; file: FileEntry }
  | { kind: "unknown" };

function originOf(pipeline: Pipeline, status: PipelineFile | undefined): Origin {
  const file = status?.files.find((f) => f.path === pipeline.config_path);
  if (!file) return { kind: "unknown" };
  if (file.status === "missing") return { kind: "api", path: file.path };
  if (file.status === "valid") {
    const defined = file.pipelines.find((p) => p.name === pipeline.name);
    return defined ? { kind: "file", file, defined } : { kind: "not-in-file", file };
  }
  return { kind: "file-broken", file };
}

export function PipelinesTab({
  project,
  pipelines,
  reload,
  maintainer,
}: {
  project: Project;
  pipelines: Pipeline[];
  reload: () => Promise<void>;
  maintainer: boolean;
}) {
  const status = useLoad(() => get<PipelineFile>(`/v1/projects/${encodeURIComponent(project.id)}/pipeline-file`), [project.id, pipelines.length]);
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<ApiFailure | null>(null);
  const file = status.data;
  const at = file?.commit_sha ? ` at ${fileCommit(file.commit_sha)}` : "";
  const validFiles = file?.files.filter((f) => f.status === "valid") ?? [];
  // Pipelines the file defines that no push has created yet (a push of the file creates them).
  const upcoming = validFiles.flatMap((f) => f.pipelines.filter((p) => p.pipeline_id === null).map((p) => ({ file: f, defined: p })));
  const done = () => void Promise.all([reload(), status.reload()]).then(() => setEditing(null));
  const act = async (work: () => Promise<unknown>) => {
    setError(null);
    try {
      await work();
      await reload();
    } catch (err) {
      setError(err as ApiFailure);
    }
  };
  return (
    <>
      <LoadState state={status} what="the pipeline file" />
      {file?.files.map((f) => (
        <FileSummary key={f.path} file={f} branch={file.branch} at={at} />
      ))}
      {file?.last_error && (
        <Notice kind="warning">
          <p>
            <strong>Last pipeline file error</strong> (a webhook delivery{" "}
            <span title={dateTime(file.last_error.received_at)}>{ago(file.last_error.received_at)}</span>
            {file.last_error.commit_sha ? (
              <>
                , commit <code>{fileCommit(file.last_error.commit_sha)}</code>
              </>
            ) : (
              ""
            )}
            ):
          </p>
          <p class="file-error">{file.last_error.message}</p>
        </Notice>
      )}
      {maintainer && editing === null && (
        <button type="button" onClick={() => setEditing("new")}>
          New pipeline
        </button>
      )}
      {editing === "new" && (
        <>
          {validFiles.length > 0 && (
            <Notice kind="warning">{`${validFiles.map((f) => f.path).join(", ")} defines this project's pipelines: a pipeline created here builds only if it reads another config file, or the file defines it too.`}</Notice>
          )}
          <PipelineForm project={project} done={done} />
        </>
      )}
      <FormError error={error} />
      {pipelines.length === 0 && upcoming.length === 0 && <p class="muted">No pipelines.</p>}
      <ul class="cards">
        {pipelines.map((p) => {
          const origin = originOf(p, file);
          if (editing === p.id)
            return (
              <li key={p.id}>
                <PipelineForm project={project} pipeline={p} done={done} />
              </li>
            );
          // What builds: the file's definition where the file decides, the stored one otherwise.
          const shown = origin.kind === "file" ? origin.defined : p;
          return (
            <li key={p.id} class="project-card">
              <strong>{p.name}</strong>
              <StatusBadge status={p.enabled ? "enabled" : "disabled"} />
              <OriginLine origin={origin} branch={file?.branch ?? project.default_branch} at={at} />
              <span class="muted">
                {shown.trigger_config.events.join(", ")} on {shown.trigger_config.branches.join(", ")} ·{" "}
                {shown.execution_config.platforms.join(", ") || "check only (no platform build)"} · Flutter {shown.execution_config.flutter_version}
              </span>
              <a href={`/projects/${encodeURIComponent(project.id)}/pipelines/${encodeURIComponent(p.id)}`}>Trends and flaky tests</a>
              {origin.kind === "file" && <FileDefinition defined={origin.defined} path={origin.file.path} />}
              {maintainer && (
                <div class="row">
                  {(origin.kind === "api" || origin.kind === "unknown") && (
                    <button type="button" class="secondary small" aria-label={`Edit ${p.name}`} onClick={() => setEditing(p.id)}>
                      Edit
                    </button>
                  )}
                  {origin.kind === "file" && (
                    <button
                      type="button"
                      class="secondary small"
                      aria-label={`${p.enabled ? "Disable" : "Enable"} ${p.name}`}
                      onClick={() => void act(() => patch(`/v1/pipelines/${encodeURIComponent(p.id)}`, { enabled: !p.enabled }))}
                    >
                      {p.enabled ? "Disable" : "Enable"}
                    </button>
                  )}
                  {origin.kind !== "file" && (
                    <button
                      type="button"
                      class="danger small"
                      aria-label={`Delete ${p.name}`}
                      onClick={() => confirm(`Delete the pipeline ${p.name}?`) && void act(() => del(`/v1/pipelines/${encodeURIComponent(p.id)}`))}
                    >
                      Delete
                    </button>
                  )}
                </div>
              )}
            </li>
          );
        })}
        {upcoming.map(({ file: f, defined }) => (
          <li key={`file:${f.path}:${defined.name}`} class="project-card">
            <strong>{defined.name}</strong>
            <span class="origin">
              From {f.path}, line {defined.line} on {file!.branch}
              {at} — not in Roost yet: the next push to the repository adds it.
            </span>
            <span class="muted">
              {defined.trigger_config.events.join(", ")} on {defined.trigger_config.branches.join(", ")} ·{" "}
              {defined.execution_config.platforms.join(", ") || "check only (no platform build)"} · Flutter {defined.execution_config.flutter_version}
            </span>
            <FileDefinition defined={defined} path={f.path} />
          </li>
        ))}
      </ul>
    </>
  );
}

/** One file as the default branch's head has it: what it decides, or why it decides nothing. */
function FileSummary({ file, branch, at }: { file: FileEntry; branch: string; at: string }) {
  if (file.status === "missing")
    return (
      <Notice>
        {`No ${file.path} on ${branch}${at}: the pipelines that read it are configured here in Roost. A ${file.path} pushed to the repository overrides them (docs/pipelines.md).`}
      </Notice>
    );
  if (file.status === "valid")
    return (
      <Notice>
        {`${file.path} on ${branch}${at} defines ${file.pipelines.map((p) => p.name).join(", ")}. Change them in the file and push: it overrides any configuration made here.`}
      </Notice>
    );
  if (file.status === "unreadable")
    return <Notice kind="warning">{`Roost could not read ${file.path} on ${branch}: ${file.message ?? "the host did not answer"}.`}</Notice>;
  return (
    <Notice kind="error">
      <p>
        <strong>{`${file.path} on ${branch}${at} is invalid`}</strong>: nothing builds from it until it is fixed.
      </p>
      <ul class="file-problems">
        {file.problems.map((p) => (
          <li>
            line {p.line}, column {p.column}: {p.path ? `${p.path}: ` : ""}
            {p.message}
          </li>
        ))}
      </ul>
    </Notice>
  );
}

function OriginLine({ origin, branch, at }: { origin: Origin; branch: string; at: string }) {
  if (origin.kind === "file")
    return (
      <span class="origin">
        From {origin.file.path}, line {origin.defined.line} on {branch}
        {at} (read-only here)
      </span>
    );
  if (origin.kind === "api")
    return (
      <span class="origin">
        Configured in Roost (no {origin.path} on {branch})
      </span>
    );
  if (origin.kind === "not-in-file")
    return (
      <span class="origin">
        Not in {origin.file.path} on {branch}: it builds nothing from pushes while the file exists. Add it to the file, or delete it.
      </span>
    );
  if (origin.kind === "file-broken")
    return (
      <span class="origin">
        {origin.file.status === "invalid"
          ? `${origin.file.path} on ${branch} is invalid: nothing builds until it is fixed.`
          : `${origin.file.path} could not be read.`}
      </span>
    );
  return null;
}

/** What the file says about one pipeline, read-only. */
function FileDefinition({ defined, path }: { defined: FilePipeline; path: string }) {
  const x = defined.execution_config;
  const list = (items: string[] | undefined) => (items && items.length > 0 ? items.join(" · ") : "—");
  return (
    <details class="file-definition">
      <summary>What {path} says</summary>
      <dl>
        <dt>Triggers</dt>
        <dd>
          {defined.trigger_config.events.join(", ")} on {defined.trigger_config.branches.join(", ")}
        </dd>
        <dt>Concurrency</dt>
        <dd>
          {defined.concurrency.max_concurrent} at once{defined.concurrency.cancel_previous ? "; a newer build cancels older ones" : ""}
        </dd>
        <dt>Platforms and Flutter</dt>
        <dd>
          {x.platforms.join(", ") || "check only (no platform build)"} · Flutter {x.flutter_version}
          {x.timeout_seconds ? ` · timeout ${Math.round(x.timeout_seconds / 60)} min` : ""}
        </dd>
        <dt>Commands</dt>
        <dd>
          before: {list(x.commands.pre_build)}; build: {x.commands.build.length ? list(x.commands.build) : "flutter build"}; after:{" "}
          {list(x.commands.post_build)}
        </dd>
        <dt>Artifacts</dt>
        <dd>{list(x.artifact_patterns)}</dd>
        <dt>Environment</dt>
        <dd>{x.env.length ? x.env.map((e) => `${e.key}=${e.value}`).join(" · ") : "—"}</dd>
        <dt>Runner labels</dt>
        <dd>{list(x.runner_labels)}</dd>
        <dt>Schedules</dt>
        <dd>{defined.schedules.length ? defined.schedules.map((s) => `${s.cron} (${s.timezone})${s.branch ? ` on ${s.branch}` : ""}`).join(" · ") : "—"}</dd>
      </dl>
    </details>
  );
}

const lines = (text: string) =>
  text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);

/** The pipeline editor: every field of the pipeline's configuration; the API validates. */
function PipelineForm({ project, pipeline, done }: { project: Project; pipeline?: Pipeline; done: () => void }) {
  const x = pipeline?.execution_config;
  const [enabled, setEnabled] = useState(pipeline?.enabled ?? true);
  const [branches, setBranches] = useState((pipeline?.trigger_config.branches ?? [project.default_branch]).join("\n"));
  const [events, setEvents] = useState<string[]>(pipeline?.trigger_config.events ?? ["push"]);
  const [cancelPrevious, setCancelPrevious] = useState(pipeline?.concurrency.cancel_previous ?? false);
  const [platforms, setPlatforms] = useState<string[]>(x?.platforms ?? ["android"]);
  const [cacheOn, setCacheOn] = useState(x?.cache?.enabled ?? true);
  const [pre, setPre] = useState((x?.commands.pre_build ?? []).join("\n"));
  const [buildCmds, setBuildCmds] = useState((x?.commands.build ?? []).join("\n"));
  const [post_, setPost] = useState((x?.commands.post_build ?? []).join("\n"));
  const [artifacts, setArtifacts] = useState((x?.artifact_patterns ?? []).join("\n"));
  const [env, setEnv] = useState(
    (x?.env ?? [])
      .filter((e) => !e.secret)
      .map((e) => `${e.key}=${e.value}`)
      .join("\n"),
  );
  const form = useForm();
  const { error, submit } = form;
  const name = useField(form, "name", pipeline?.name ?? "build");
  const configPath = useField(form, "config_path", pipeline?.config_path_explicit ? pipeline.config_path : "");
  const maxConcurrent = useField(form, "max_concurrent", String(pipeline?.concurrency.max_concurrent ?? 1));
  const flutter = useField(form, "flutter_version", x?.flutter_version ?? "stable");
  const timeoutMinutes = useField(form, "timeout_seconds", String((x?.timeout_seconds ?? 3600) / 60));
  const labels = useField(form, "runner_labels", (x?.runner_labels ?? []).join(" "));
  const toggle = (list: string[], value: string, on: boolean) => (on ? [...new Set([...list, value])] : list.filter((v) => v !== value));
  const area = (label: string, name: string, value: string, set: (v: string) => void, hint?: string) => (
    <TextAreaField label={label} name={name} rows={3} value={value} onInput={set} error={error} hint={hint} />
  );
  const save = submit(async () => {
    const body = {
      name: name.value,
      enabled,
      config_path: configPath.value || (pipeline ? null : undefined),
      concurrency: { cancel_previous: cancelPrevious, max_concurrent: Number(maxConcurrent.value) },
      trigger_config: { branches: lines(branches), events },
      execution_config: {
        platforms,
        flutter_version: flutter.value,
        timeout_seconds: Math.round(Number(timeoutMinutes.value) * 60),
        // Only the switch: paths and key files keep what the pipeline has (the defaults on a new one).
        cache: { ...(x?.cache ?? {}), enabled: cacheOn },
        commands: { pre_build: lines(pre), build: lines(buildCmds), post_build: lines(post_) },
        // Empty on a new pipeline: the server's defaults (APK, AAB, IPA, macOS app).
        ...(pipeline || lines(artifacts).length > 0 ? { artifact_patterns: lines(artifacts) } : {}),
        runner_labels: labels.value.split(/\s+/).filter(Boolean),
        // Secret entries are never returned; only plain ones are edited here.
        ...(pipeline && x?.env.some((e) => e.secret)
          ? {}
          : {
              env: lines(env).map((l) => ({
                key: l.slice(0, l.indexOf("=") < 0 ? l.length : l.indexOf("=")),
                value: l.includes("=") ? l.slice(l.indexOf("=") + 1) : "",
              })),
            }),
      },
    };
    if (pipeline) await patch(`/v1/pipelines/${encodeURIComponent(pipeline.id)}`, body);
    else await post(`/v1/projects/${encodeURIComponent(project.id)}/pipelines`, body);
    done();
  });
  return (
    <form class="panel pipeline-form" aria-label={pipeline ? `Edit pipeline ${pipeline.name}` : "New pipeline"} onSubmit={save}>
      <h3>{pipeline ? `Edit ${pipeline.name}` : "New pipeline"}</h3>
      <TextField label="Name" {...name} required />
      <label class="inline">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Enabled (a disabled pipeline is never triggered by
        webhooks)
      </label>
      <TextField label="Config file path (empty: roost.yaml)" {...configPath} />
      {area("Branches (one pattern a line)", "branches", branches, setBranches, "e.g. main, release/*")}
      <fieldset>
        <legend>Trigger events</legend>
        {["push", "pull_request", "tag"].map((ev) => (
          <label class="inline">
            <input type="checkbox" checked={events.includes(ev)} onChange={(e) => setEvents(toggle(events, ev, e.currentTarget.checked))} /> {ev}
          </label>
        ))}
        {error?.forField("events") && <p class="field-error">{error.forField("events")}</p>}
      </fieldset>
      <fieldset>
        <legend>Platforms</legend>
        {["android", "ios", "macos"].map((p) => (
          <label class="inline">
            <input type="checkbox" checked={platforms.includes(p)} onChange={(e) => setPlatforms(toggle(platforms, p, e.currentTarget.checked))} /> {p}
          </label>
        ))}
        <p class="muted">None: a check pipeline that only runs its commands (analyze, test), with no platform build.</p>
        {error?.forField("platforms") && <p class="field-error">{error.forField("platforms")}</p>}
      </fieldset>
      <TextField
        label="Flutter version"
        {...flutter}
        hint="stable, beta, main, fvm (the version .fvmrc names) or a version like 3.27.1, which the runner installs when it lacks it"
      />
      <TextField label="Build timeout (minutes)" {...timeoutMinutes} type="number" hint="a build running longer is stopped and fails with reason timeout" />
      <label class="inline">
        <input type="checkbox" checked={cacheOn} onChange={(e) => setCacheOn(e.currentTarget.checked)} /> Cache pub, Gradle and CocoaPods downloads on the
        runner (keyed by the lock files)
      </label>
      {area("Commands before the build (one a line)", "pre_build", pre, setPre)}
      {area("Build commands (one a line; empty: flutter build)", "build", buildCmds, setBuildCmds)}
      {area("Commands after the build", "post_build", post_, setPost)}
      {area(
        "Artifact patterns (one a line)",
        "artifact_patterns",
        artifacts,
        setArtifacts,
        pipeline ? undefined : "empty: the APK, AAB, IPA and macOS app Flutter builds",
      )}
      {!(pipeline && x?.env.some((e) => e.secret)) && area("Environment (KEY=value, one a line)", "env", env, setEnv)}
      <TextField label="Runner labels (space-separated)" {...labels} />
      <label class="inline">
        <input type="checkbox" checked={cancelPrevious} onChange={(e) => setCancelPrevious(e.currentTarget.checked)} /> A newer build of the same branch cancels
        older ones
      </label>
      <TextField label="Builds at once" {...maxConcurrent} type="number" />
      <FormError
        error={error}
        fields={[
          "name",
          "config_path",
          "branches",
          "events",
          "platforms",
          "flutter_version",
          "timeout_seconds",
          "pre_build",
          "build",
          "post_build",
          "artifact_patterns",
          "env",
          "runner_labels",
          "max_concurrent",
        ]}
      />
      {error && error.details.length > 0 && (
        <ul class="field-error" aria-label="Problems">
          {error.details.map((d) => (
            <li>
              {d.path.replace(/^body\./, "")}: {d.message}
            </li>
          ))}
        </ul>
      )}
      <SubmitOrCancel label={pipeline ? "Save pipeline" : "Create pipeline"} cancel={done} />
    </form>
  );
}
