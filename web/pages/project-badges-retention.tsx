// Status badges and retention of a project: every member sees whether the badges are public (with
// the Markdown to paste into a README) and how long builds keep their logs and artifacts;
// maintainers change both. The API decides (docs/api.md, docs/operations.md "Retention").
import { useEffect, useState } from "preact/hooks";
import { ApiFailure, get, put } from "../api.ts";
import { CopyButton, FormError, LoadState, Notice, TextField, useLoad, useForm } from "../components.tsx";
import type { Project } from "../types.ts";
import type { BadgeSettings, RetentionSettings } from "../settings-types.ts";

export function BadgesRetentionTab({ project, maintainer }: { project: Project; maintainer: boolean }) {
  return (
    <>
      <Badges project={project} maintainer={maintainer} />
      <Retention project={project} maintainer={maintainer} />
    </>
  );
}

/** The Markdown of a badge linking to the project's page on the same Roost. */
export function badgeMarkdown(name: string, url: string, projectId: string): string {
  return `[![${name}](${url})](${new URL(url).origin}/projects/${encodeURIComponent(projectId)})`;
}

function Badges({ project, maintainer }: { project: Project; maintainer: boolean }) {
  const base = `/v1/projects/${encodeURIComponent(project.id)}/badges`;
  const state = useLoad(() => get<BadgeSettings>(base), [base]);
  const [error, setError] = useState<ApiFailure | null>(null);
  const settings = state.data;
  return (
    <section class="panel" aria-labelledby="h-badges">
      <h2 id="h-badges">Status badges</h2>
      <LoadState state={state} what="the badges" />
      {settings && (
        <>
          {maintainer ? (
            <label class="inline">
              <input
                type="checkbox"
                checked={settings.public}
                onChange={async (e) => {
                  setError(null);
                  try {
                    await put(base, { public: e.currentTarget.checked });
                  } catch (err) {
                    setError(err as ApiFailure);
                  }
                  await state.reload();
                }}
              />{" "}
              Public: anyone may read the badges, without signing in (for a README)
            </label>
          ) : (
            <p>{settings.public ? "The badges are public: anyone may read them." : "The badges are private: only signed-in members see them."}</p>
          )}
          <FormError error={error} />
          {!settings.public && maintainer && (
            <p class="hint">While private, a badge in a README shows only to people signed in to Roost in the same browser.</p>
          )}
          {settings.badges.length === 0 && <p class="muted">No pipelines, no badges.</p>}
          <ul class="plain badges">
            {settings.badges.map((b) => {
              const markdown = badgeMarkdown(b.pipeline_name, b.url, project.id);
              return (
                <li key={b.pipeline_id} class="badge-row">
                  {/* Same-origin path: the page's CSP allows images from this Roost only. A private badge answers 404 to everyone. */}
                  {settings.public && (
                    <img src={`/v1/pipelines/${encodeURIComponent(b.pipeline_id)}/badge.svg`} alt={`Status of ${b.pipeline_name}`} height={20} />
                  )}
                  <label for={`badge-md-${b.pipeline_id}`}>Markdown for {b.pipeline_name}</label>
                  <div class="secret-row">
                    <input id={`badge-md-${b.pipeline_id}`} class="code" readOnly value={markdown} onFocus={(e) => e.currentTarget.select()} />
                    <CopyButton text={markdown} label={`Copy Markdown for ${b.pipeline_name}`} />
                  </div>
                </li>
              );
            })}
          </ul>
          <p class="hint">Add ?branch=name to a badge URL for another branch than the default.</p>
        </>
      )}
    </section>
  );
}

const FIELDS = [
  ["log_retention_days", "Keep logs (days)"],
  ["artifact_retention_days", "Keep artifacts (days)"],
  ["keep_builds", "Keep the logs and artifacts of the newest builds (per pipeline)"],
] as const;
type RetentionKey = (typeof FIELDS)[number][0];

const describe = (value: number, key: RetentionKey) => (value === 0 ? "no limit" : key === "keep_builds" ? `the newest ${value}` : `${value} days`);

function Retention({ project, maintainer }: { project: Project; maintainer: boolean }) {
  const base = `/v1/projects/${encodeURIComponent(project.id)}/retention`;
  const state = useLoad(() => get<RetentionSettings>(base), [base]);
  const [values, setValues] = useState<Record<RetentionKey, string>>({ log_retention_days: "", artifact_retention_days: "", keep_builds: "" });
  const { error, submit } = useForm();
  const [saved, setSaved] = useState(false);
  const settings = state.data;
  useEffect(() => {
    if (settings)
      setValues({
        log_retention_days: settings.log_retention_days?.toString() ?? "",
        artifact_retention_days: settings.artifact_retention_days?.toString() ?? "",
        keep_builds: settings.keep_builds?.toString() ?? "",
      });
  }, [settings]);
  const save = submit(async () => {
    setSaved(false);
    const body = Object.fromEntries(FIELDS.map(([key]) => [key, values[key].trim() === "" ? null : Number(values[key])]));
    await put(base, body);
    setSaved(true);
    await state.reload();
  });
  return (
    <section class="panel" aria-labelledby="h-retention">
      <h2 id="h-retention">Retention of logs and artifacts</h2>
      <p class="muted">
        Finished builds lose their log and artifacts after these limits; the build itself stays. The latest successful build of each pipeline and branch,
        unfinished builds and builds finished within the hour are always kept.
      </p>
      <LoadState state={state} what="the retention settings" />
      {settings && (
        <dl class="facts retention-effective">
          {FIELDS.map(([key, label]) => (
            <div key={key}>
              <dt>{label}</dt>
              <dd>
                {describe(settings.effective[key], key)}
                {settings[key] === null ? " (instance default)" : ` (this project; the instance default is ${describe(settings.instance_default[key], key)})`}
              </dd>
            </div>
          ))}
        </dl>
      )}
      {settings && maintainer && (
        <form aria-label="Retention" onSubmit={save}>
          <div class="row">
            {FIELDS.map(([key, label]) => (
              <TextField
                key={key}
                label={label}
                name={key}
                type="number"
                value={values[key]}
                onInput={(v) => setValues({ ...values, [key]: v })}
                error={error}
                hint={`Empty: the instance default (${describe(settings.instance_default[key], key)}); 0: no limit.`}
              />
            ))}
          </div>
          <FormError error={error} fields={FIELDS.map(([key]) => key)} />
          {saved && <Notice kind="success">Saved; the next background pass applies it.</Notice>}
          <button type="submit">Save retention</button>
        </form>
      )}
    </section>
  );
}
