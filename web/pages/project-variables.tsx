// The project's variables and secrets (docs/secrets.md), for its maintainers: the project's own
// and each pipeline's, listed by name (a secret's value is never returned by the API, so never
// shown), added or replaced (a value, a secret, a file uploaded as base64, protected refs),
// deleted, and the audit list of who changed which one when (never a value).
import { useState } from "preact/hooks";
import { ApiFailure, del, get, put, query } from "../api.ts";
import { Field, FormError, LoadState, Notice, TextAreaField, TextField, Table, useField, useForm, useLoad } from "../components.tsx";
import { ago, bytes, dateTime } from "../format.ts";
import type { Pipeline, Project } from "../types.ts";
import type { Variable, VariableChange } from "../settings-types.ts";

/** Largest file variable the API takes (lib/variables/variables.ts MAX_FILE_BYTES). */
const MAX_FILE_BYTES = 256 * 1024;

/** The bytes of a file as base64 (what a file variable's value is). */
async function fileToBase64(file: File): Promise<string> {
  const data = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  for (let i = 0; i < data.length; i += 0x8000) binary += String.fromCharCode(...data.subarray(i, i + 0x8000));
  return btoa(binary);
}

export function VariablesTab({ project, pipelines }: { project: Project; pipelines: Pipeline[] }) {
  const [scope, setScope] = useState("");
  const base = scope ? `/v1/pipelines/${encodeURIComponent(scope)}/variables` : `/v1/projects/${encodeURIComponent(project.id)}/variables`;
  const list = useLoad(() => get<{ variables: Variable[] }>(base), [base]);
  const changes = useLoad(
    () => get<{ changes: VariableChange[] }>(`/v1/projects/${encodeURIComponent(project.id)}/variable-changes${query({ limit: 50 })}`),
    [project.id],
  );
  const [error, setError] = useState<ApiFailure | null>(null);
  const [message, setMessage] = useState("");
  // "Replace" fills the form with a variable's settings (its value is write-only: typed again).
  const [preset, setPreset] = useState<Variable | null>(null);
  const pipelineName = (id: string | null) => (id === null ? "project" : (pipelines.find((p) => p.id === id)?.name ?? id));
  const reload = async () => {
    await Promise.all([list.reload(), changes.reload()]);
  };
  return (
    <>
      <p class="muted">
        Every build of the project's pipelines receives the project's variables; a pipeline's own variable replaces a project variable of the same name. Secrets
        are encrypted at rest, masked in logs, withheld from pull requests from forks, and never shown again.
      </p>
      <div class="field inline-field">
        <label for="variables-scope">Variables of</label>
        <select id="variables-scope" value={scope} onChange={(e) => setScope(e.currentTarget.value)}>
          <option value="">the project (every pipeline)</option>
          {pipelines.map((p) => (
            <option value={p.id}>pipeline {p.name}</option>
          ))}
        </select>
      </div>
      <section class="panel" aria-labelledby="h-variables">
        <h2 id="h-variables">{scope ? `Variables of pipeline ${pipelineName(scope)}` : "Project variables"}</h2>
        <LoadState state={list} what="variables" />
        {message && <Notice kind="success">{message}</Notice>}
        {list.data && list.data.variables.length === 0 && <p class="muted">No variables yet.</p>}
        {list.data && list.data.variables.length > 0 && (
          <Table caption="Variables" columns={["Name", "Value", "Kind", "Protected refs", "Updated", <span class="sr-only">Actions</span>]} class="variables">
            {list.data.variables.map((v) => (
              <tr key={v.key}>
                <td>
                  <code>{v.key}</code>
                </td>
                <td>
                  {v.value === null ? (
                    <span class="muted">hidden (write-only)</span>
                  ) : v.file ? (
                    `file, ${bytes(Math.floor((v.value.replace(/\s+/g, "").length * 3) / 4))}`
                  ) : (
                    <code>{v.value}</code>
                  )}
                </td>
                <td>{[v.secret ? "secret" : "plain", v.file ? "file" : ""].filter(Boolean).join(", ")}</td>
                <td>{v.protected_refs.length > 0 ? v.protected_refs.join(", ") : <span class="muted">every ref</span>}</td>
                <td title={dateTime(v.updated_at)}>{ago(v.updated_at)}</td>
                <td class="row">
                  <button type="button" class="secondary small" aria-label={`Replace ${v.key}`} onClick={() => setPreset(v)}>
                    Replace
                  </button>
                  <button
                    type="button"
                    class="danger small"
                    aria-label={`Delete ${v.key}`}
                    onClick={async () => {
                      if (!confirm(`Delete the variable ${v.key}?`)) return;
                      setError(null);
                      setMessage("");
                      try {
                        await del(`${base}/${encodeURIComponent(v.key)}`);
                        await reload();
                        setMessage(`${v.key} deleted.`);
                      } catch (err) {
                        setError(err as ApiFailure);
                        await reload();
                      }
                    }}
                  >
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </Table>
        )}
        <FormError error={error} />
      </section>
      <VariableForm
        key={`${base} ${preset?.key ?? ""} ${preset?.updated_at ?? ""}`}
        base={base}
        preset={preset}
        saved={async (text) => {
          setPreset(null);
          await reload();
          setMessage(text);
        }}
      />
      <section class="panel" aria-labelledby="h-variable-changes">
        <h2 id="h-variable-changes">Changes</h2>
        <LoadState state={changes} what="the changes" />
        {changes.data && changes.data.changes.length === 0 && <p class="muted">No changes yet.</p>}
        {changes.data && changes.data.changes.length > 0 && (
          <ul class="plain variable-changes">
            {changes.data.changes.map((c) => (
              <li key={c.id}>
                <span title={dateTime(c.created_at)}>{ago(c.created_at)}</span>: {c.actor || "someone"} {c.action} {c.secret ? "secret" : "variable"}{" "}
                <code>{c.key}</code> of {c.pipeline_id === null ? "the project" : `pipeline ${pipelineName(c.pipeline_id)}`}
              </li>
            ))}
          </ul>
        )}
      </section>
    </>
  );
}

function VariableForm({ base, preset, saved }: { base: string; preset: Variable | null; saved: (message: string) => Promise<void> }) {
  const [secret, setSecret] = useState(preset?.secret ?? false);
  const [asFile, setAsFile] = useState(preset?.file ?? false);
  const [file, setFile] = useState<File | null>(null);
  const form = useForm();
  const { error, setError, busy, submit } = form;
  const key = useField(form, "key", preset?.key ?? "");
  const value = useField(form, "value");
  const refs = useField(form, "protected_refs", (preset?.protected_refs ?? []).join("\n"));
  const save = submit(async () => {
    if (asFile && !file) return setError(new ApiFailure(0, "invalid_request", "Choose a file.", [{ path: "file_upload", message: "Choose a file." }]));
    if (asFile && file && file.size > MAX_FILE_BYTES)
      return setError(
        new ApiFailure(0, "invalid_request", `A file must be at most ${MAX_FILE_BYTES / 1024} KiB.`, [
          { path: "file_upload", message: `A file must be at most ${MAX_FILE_BYTES / 1024} KiB.` },
        ]),
      );
    const body = {
      value: asFile && file ? await fileToBase64(file) : value.value,
      secret,
      file: asFile,
      protected_refs: refs.value
        .split("\n")
        .map((r) => r.trim())
        .filter(Boolean),
    };
    const { created } = await put<{ created: boolean }>(`${base}/${encodeURIComponent(key.value)}`, body);
    const text = `${key.value} ${created ? "added" : "replaced"}.`;
    key.set("");
    value.set("");
    setFile(null);
    refs.set("");
    await saved(text);
  });
  return (
    <form class="panel" aria-label="Add or replace a variable" onSubmit={save}>
      <h2>Add or replace a variable</h2>
      {preset && (
        <p class="hint">
          Replacing {preset.key}: its settings are filled in; type the {preset.file ? "file" : "value"} again (values are write-only).
        </p>
      )}
      <TextField label="Name" {...key} required hint="Letters, digits and _; an existing name is replaced." autoComplete="off" />
      <label class="inline">
        <input type="checkbox" checked={secret} onChange={(e) => setSecret(e.currentTarget.checked)} /> Secret (write-only: never shown again, masked in logs)
      </label>
      <label class="inline">
        <input type="checkbox" checked={asFile} onChange={(e) => setAsFile(e.currentTarget.checked)} /> File (the runner writes it to a private file and sets
        the variable to its path)
      </label>
      {asFile ? (
        <Field label="File (at most 256 KiB)" name="file_upload" error={error}>
          {(id, describedBy, invalid) => (
            <input
              id={id}
              type="file"
              aria-describedby={describedBy}
              aria-invalid={invalid || undefined}
              onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)}
            />
          )}
        </Field>
      ) : secret ? (
        <TextField label="Value" {...value} type="password" autoComplete="new-password" />
      ) : (
        <TextAreaField label="Value" {...value} />
      )}
      <TextAreaField
        label="Protected refs (one pattern a line; empty: every build)"
        {...refs}
        hint="When set, only builds of a matching branch or tag that are not pull requests receive the variable: branches as main or release/*, tags as refs/tags/v* (a plain name never matches a tag)."
      />
      <FormError error={error} fields={["key", "value", "file_upload", "protected_refs"]} />
      <button type="submit" disabled={busy}>
        Save variable
      </button>
    </form>
  );
}
