// Scheduled builds of each pipeline (docs/operations.md "Scheduled builds"): every project member
// sees them with their next run and last run; maintainers create, edit and delete them. The cron
// expression is read in the schedule's IANA time zone.
import { useState } from "preact/hooks";
import { ApiFailure, get, patch, post } from "../api.ts";
import { ConfirmButton, FormError, LoadState, removeFromList, Notice, SubmitOrCancel, TextField, useField, useForm, useLoad } from "../components.tsx";
import { ago, dateTime, shortSha } from "../format.ts";
import type { Pipeline, Project } from "../types.ts";
import type { Schedule } from "../settings-types.ts";

export function SchedulesTab({ project, pipelines, maintainer }: { project: Project; pipelines: Pipeline[]; maintainer: boolean }) {
  if (pipelines.length === 0) return <p class="muted">This project has no pipeline yet.</p>;
  return (
    <>
      <p class="muted">
        A schedule builds a branch of a pipeline at the times of a cron expression (minute hour day-of-month month day-of-week, or @daily and the like), read in
        its time zone.
      </p>
      {pipelines.map((p) => (
        <PipelineSchedules key={p.id} project={project} pipeline={p} maintainer={maintainer} />
      ))}
    </>
  );
}

function PipelineSchedules({ project, pipeline, maintainer }: { project: Project; pipeline: Pipeline; maintainer: boolean }) {
  const base = `/v1/pipelines/${encodeURIComponent(pipeline.id)}/schedules`;
  const list = useLoad(() => get<{ schedules: Schedule[] }>(base), [base], 30_000);
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<ApiFailure | null>(null);
  const headingId = `h-schedules-${pipeline.id}`;
  const done = async () => {
    await list.reload();
    setEditing(null);
  };
  return (
    <section class="panel" aria-labelledby={headingId}>
      <h2 id={headingId}>Schedules of {pipeline.name}</h2>
      <LoadState state={list} what="schedules" />
      {list.data && list.data.schedules.length === 0 && <p class="muted">No schedules.</p>}
      <ul class="plain schedules">
        {list.data?.schedules.map((s) =>
          editing === s.id ? (
            <li key={s.id}>
              <ScheduleForm project={project} base={base} pipeline={pipeline} schedule={s} done={done} />
            </li>
          ) : (
            <li key={s.id} class="schedule">
              <div>
                <code>{s.cron}</code> ({s.timezone}) on <span class="branch">{s.branch}</span> · {s.enabled ? "enabled" : "disabled (never fires)"}
                {s.build_when_unchanged ? "" : " · skips a commit it already built"}
                {s.source === "file" && <> · from {s.config_path ?? "the pipeline file"} (change it there)</>}
              </div>
              <div class="muted">
                Next run: {s.next_run_at === null ? "none" : <time dateTime={new Date(s.next_run_at * 1000).toISOString()}>{dateTime(s.next_run_at)}</time>}{" "}
                (your time)
                {s.last_run && (
                  <>
                    {" "}
                    · last run <span title={dateTime(s.last_run.slot_at)}>{ago(s.last_run.slot_at)}</span>: {s.last_run.result}
                    {s.last_run.build_id && (
                      <>
                        {" "}
                        <a href={`/projects/${encodeURIComponent(project.id)}/builds/${encodeURIComponent(s.last_run.build_id)}`}>the build</a>
                      </>
                    )}
                    {s.last_run.commit_sha && s.last_run.result === "unchanged" && <> (still {shortSha(s.last_run.commit_sha)})</>}
                    {s.last_run.error && ` — ${s.last_run.error}`}
                  </>
                )}
              </div>
              {maintainer && editing === null && s.source === "api" && (
                <div class="row">
                  <button type="button" class="secondary small" aria-label={`Edit schedule ${s.cron} on ${s.branch}`} onClick={() => setEditing(s.id)}>
                    Edit
                  </button>
                  <ConfirmButton
                    danger
                    label="Delete"
                    ariaLabel={`Delete schedule ${s.cron} on ${s.branch}`}
                    question={`Delete the schedule ${s.cron} of ${pipeline.name}?`}
                    act={() => removeFromList(`${base}/${encodeURIComponent(s.id)}`, setError, list.reload)}
                  />
                </div>
              )}
            </li>
          ),
        )}
      </ul>
      <FormError error={error} />
      {maintainer && editing === null && (
        <button type="button" class="secondary" onClick={() => setEditing("new")}>
          New schedule for {pipeline.name}
        </button>
      )}
      {editing === "new" && <ScheduleForm project={project} base={base} pipeline={pipeline} done={done} />}
    </section>
  );
}

function ScheduleForm({
  project,
  base,
  pipeline,
  schedule,
  done,
}: {
  project: Project;
  base: string;
  pipeline: Pipeline;
  schedule?: Schedule;
  done: () => Promise<void>;
}) {
  const [unchanged, setUnchanged] = useState(schedule?.build_when_unchanged ?? true);
  const [enabled, setEnabled] = useState(schedule?.enabled ?? true);
  const form = useForm();
  const { error, submit } = form;
  const cron = useField(form, "cron", schedule?.cron ?? "0 3 * * *");
  const timezone = useField(form, "timezone", schedule?.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone ?? "UTC");
  const branch = useField(form, "branch", schedule?.branch ?? project.default_branch);
  const label = schedule ? `Edit schedule of ${pipeline.name}` : `New schedule of ${pipeline.name}`;
  const save = submit(async () => {
    const body = { cron: cron.value, timezone: timezone.value, branch: branch.value, build_when_unchanged: unchanged, enabled };
    if (schedule) await patch(`${base}/${encodeURIComponent(schedule.id)}`, body);
    else await post(base, body);
    await done();
  });
  return (
    <form class="card-form" aria-label={label} onSubmit={save}>
      <h3>{label}</h3>
      <div class="row">
        <TextField label="Cron expression" {...cron} required hint="e.g. 0 3 * * 1-5 (03:00 on weekdays) or @daily" />
        <TextField label="Time zone" {...timezone} required hint="IANA name, e.g. Europe/Berlin or UTC" />
        <TextField label="Branch" {...branch} required />
      </div>
      <label class="inline">
        <input type="checkbox" checked={unchanged} onChange={(e) => setUnchanged(e.currentTarget.checked)} /> Build even when the branch has not changed since
        the last scheduled build
      </label>
      <label class="inline">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Enabled
      </label>
      <FormError error={error} fields={["cron", "timezone", "branch"]} />
      {!schedule && <Notice>A new schedule counts from now: no past time fires.</Notice>}
      <SubmitOrCancel label={schedule ? "Save schedule" : "Create schedule"} cancel={() => void done()} />
    </form>
  );
}
