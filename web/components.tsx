// Small shared pieces: status badges (a word and a shape, never colour alone), form fields with
// their error next to them, notices, copy buttons, and data loading with a visible state.
import type { ComponentChildren, JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiFailure, del } from "./api.ts";

const STATUS_ICON: Record<string, string> = {
  queued: "◷",
  running: "▶",
  succeeded: "✓",
  failed: "✕",
  canceled: "⊘",
  skipped: "–",
  // Runners.
  online: "●",
  offline: "○",
  revoked: "⊘",
  // Pipelines.
  enabled: "✓",
  disabled: "○",
  // Users and API tokens.
  active: "✓",
  deactivated: "⊘",
  expired: "◷",
  open: "!",
  resolved: "✓",
  built: "✓",
  ignored: "–",
  duplicate: "=",
  rejected: "✕",
  // Deployments (web/pages/deployments.tsx).
  waiting_approval: "‖",
  approved: "→",
  // Test results and analyzer issues (web/pages/build-tests.tsx).
  passed: "✓",
  error: "!",
  flaky: "≈",
  warning: "⚠",
  notice: "i",
};

/** A status as a word and a symbol; `label` replaces the word (e.g. "2 failed"). */
export function StatusBadge({ status, label }: { status: string; label?: string }) {
  return (
    <span class={`badge badge-${status}`}>
      <span aria-hidden="true">{STATUS_ICON[status] ?? "•"}</span> {label ?? status}
    </span>
  );
}

export function Field(props: {
  label: string;
  name: string;
  error?: ApiFailure | null;
  hint?: ComponentChildren;
  children: (id: string, describedBy: string | undefined, invalid: boolean) => JSX.Element;
}) {
  const id = `f-${props.name}`;
  const message = props.error?.forField(props.name);
  const describedBy = [props.hint ? `${id}-hint` : "", message ? `${id}-error` : ""].filter(Boolean).join(" ") || undefined;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.children(id, describedBy, Boolean(message))}
      {props.hint && (
        <p class="hint" id={`${id}-hint`}>
          {props.hint}
        </p>
      )}
      {message && (
        <p class="field-error" id={`${id}-error`} role="alert">
          {message}
        </p>
      )}
    </div>
  );
}

/** What every text control takes: its label, its name (also the API's field name), its value and its error. */
interface TextControlProps {
  label: string;
  name: string;
  value: string;
  onInput: (v: string) => void;
  error?: ApiFailure | null;
  hint?: ComponentChildren;
  required?: boolean;
}

/** The attributes an input and a textarea share: the id the label points at, the value, the error's wiring. */
function controlAttributes(props: TextControlProps, id: string, describedBy: string | undefined, invalid: boolean) {
  return {
    id,
    value: props.value,
    required: props.required,
    "aria-describedby": describedBy,
    "aria-invalid": invalid || undefined,
    onInput: (e: Event) => props.onInput((e.currentTarget as HTMLInputElement | HTMLTextAreaElement).value),
  };
}

/** A text input with its label and its own error from the API's details. */
export function TextField(props: TextControlProps & { type?: string; placeholder?: string; autoComplete?: string }) {
  return (
    <Field label={props.label} name={props.name} error={props.error} hint={props.hint}>
      {(id, describedBy, invalid) => (
        <input
          {...controlAttributes(props, id, describedBy, invalid)}
          name={props.name}
          type={props.type ?? "text"}
          placeholder={props.placeholder}
          autoComplete={props.autoComplete}
        />
      )}
    </Field>
  );
}

/** A textarea with its label and its own error from the API's details (one value a line, a certificate). */
export function TextAreaField(props: TextControlProps & { rows?: number }) {
  return (
    <Field label={props.label} name={props.name} error={props.error} hint={props.hint}>
      {(id, describedBy, invalid) => <textarea {...controlAttributes(props, id, describedBy, invalid)} rows={props.rows ?? 2} />}
    </Field>
  );
}

/**
 * A text field's state, bound to its name and its form's error: spread it into a TextField or a
 * TextAreaField (`<TextField label="Flutter version" {...flutter} />`), read `.value`, reset with `.set`.
 */
export interface FieldBinding {
  name: string;
  value: string;
  onInput: (v: string) => void;
  error: ApiFailure | null;
  set: (v: string) => void;
}

export function useField(form: { error: ApiFailure | null }, name: string, initial = ""): FieldBinding {
  const [value, set] = useState(initial);
  return { name, value, onInput: set, error: form.error, set };
}

/** The end of an add-or-edit form: its submit button and a Cancel that closes the form unsaved. */
export function SubmitOrCancel({ label, cancel }: { label: string; cancel: () => void }) {
  return (
    <div class="row">
      <button type="submit">{label}</button>
      <button type="button" class="secondary" onClick={cancel}>
        Cancel
      </button>
    </div>
  );
}

export interface FormState {
  /** What the last submit threw, shown beside its field or by FormError. */
  error: ApiFailure | null;
  setError: (error: ApiFailure | null) => void;
  /** Whether a submit is running. */
  busy: boolean;
  /**
   * An onSubmit handler: the page stays, the last error is cleared and `busy` set while `act`
   * runs, and what it throws becomes `error` (through `place`, e.g. to put an error code on its field).
   */
  submit: (act: () => Promise<void>, place?: (thrown: unknown) => ApiFailure | null) => (e: Event) => Promise<void>;
}

export function useForm(): FormState {
  const [error, setError] = useState<ApiFailure | null>(null);
  const [busy, setBusy] = useState(false);
  const submit: FormState["submit"] =
    (act, place = (thrown) => thrown as ApiFailure) =>
    async (e) => {
      e.preventDefault();
      setBusy(true);
      setError(null);
      try {
        await act();
      } catch (thrown) {
        setError(place(thrown));
      } finally {
        setBusy(false);
      }
    };
  return { error, setError, busy, submit };
}

/** The sentence of an error that no field claims (or of any error, when no field matched). */
export function FormError({ error, fields = [] }: { error: ApiFailure | Error | null; fields?: string[] }) {
  if (!error) return null;
  if (error instanceof ApiFailure && error.details.length > 0 && fields.some((f) => error.forField(f))) return null;
  return (
    <p class="notice notice-error" role="alert">
      {error.message}
    </p>
  );
}

/** A small button that asks `question` (window.confirm) before it runs `act`: a delete, a revoke, a rotation. */
export function ConfirmButton(props: { label: string; ariaLabel: string; question: string; danger?: boolean; act: () => Promise<void> }) {
  return (
    <button
      type="button"
      class={props.danger ? "danger small" : "secondary small"}
      aria-label={props.ariaLabel}
      onClick={async () => {
        if (confirm(props.question)) await props.act();
      }}
    >
      {props.label}
    </button>
  );
}

/** Runs a button's `act` with the last error cleared; what it throws becomes the error shown. */
export async function showingError(setError: (error: ApiFailure | null) => void, act: () => Promise<unknown>): Promise<void> {
  setError(null);
  try {
    await act();
  } catch (err) {
    setError(err as ApiFailure);
  }
}

/** DELETE `url`, then `reload()` the list it was in; a refusal becomes the list's error. */
export async function removeFromList(url: string, setError: (error: ApiFailure | null) => void, reload: () => Promise<void>): Promise<void> {
  await showingError(setError, () => del(url));
  await reload();
}

export function Notice({ kind = "info", children }: { kind?: "info" | "error" | "success" | "warning"; children: ComponentChildren }) {
  return (
    <div class={`notice notice-${kind}`} role={kind === "error" ? "alert" : "status"}>
      {children}
    </div>
  );
}

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      class="secondary small"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
        } catch {
          const area = document.createElement("textarea");
          area.value = text;
          document.body.append(area);
          area.select();
          document.execCommand("copy");
          area.remove();
        }
        setCopied(true);
        setTimeout(() => setCopied(false), 2000);
      }}
    >
      {copied ? "Copied" : label}
    </button>
  );
}

/** Shown once: a secret with a copy button, and what to do with it. */
export function SecretOnce({ title, secret, children }: { title: string; secret: string; children?: ComponentChildren }) {
  return (
    <div class="notice notice-success secret-once" role="status">
      <p>
        <strong>{title}</strong> It is shown only now; copy it before you leave this page.
      </p>
      <div class="secret-row">
        <code class="secret">{secret}</code>
        <CopyButton text={secret} />
      </div>
      {children}
    </div>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: Error | null;
  loading: boolean;
  reload: () => Promise<void>;
  /** Changes the loaded data in place (a pushed change), without a request. */
  update(change: (data: T) => T): void;
}

/**
 * Loads `load()` when `deps` change, and every `pollMs` when given (pages that update live);
 * a poll is skipped while `pushed()` says changes arrive by push (web/live.ts).
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], pollMs?: number, pushed?: () => boolean): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<Error | null>(null);
  const [loading, setLoading] = useState(true);
  const current = useRef(load);
  current.current = load;
  const run = async () => {
    try {
      const value = await current.current();
      setData(value);
      setError(null);
    } catch (e) {
      setError(e as Error);
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    setLoading(true);
    setData(undefined);
    void run();
    if (!pollMs) return;
    const timer = setInterval(() => {
      if (document.visibilityState === "visible" && !pushed?.()) void run();
    }, pollMs);
    return () => clearInterval(timer);
  }, deps);
  return { data, error, loading, reload: run, update: (change) => setData((d) => (d === undefined ? d : change(d))) };
}

/** A filter's select, "All" first. */
export function FilterSelect(props: {
  id: string;
  label: string;
  inline?: boolean;
  value: string;
  set: (v: string) => void;
  options: (string | [string, string])[];
}) {
  return (
    <div class={props.inline ? "field inline-field" : "field"}>
      <label for={props.id}>{props.label}</label>
      <select id={props.id} value={props.value} onChange={(e) => props.set(e.currentTarget.value)}>
        <option value="">All</option>
        {props.options.map((o) => {
          const [value, text] = typeof o === "string" ? [o, o] : o;
          return <option value={value}>{text}</option>;
        })}
      </select>
    </div>
  );
}

export function LoadState({ state, what }: { state: Loaded<unknown>; what: string }) {
  if (state.error) return <Notice kind="error">{`Could not load ${what}: ${state.error.message}`}</Notice>;
  if (state.loading && state.data === undefined)
    return (
      <p class="muted" role="status">
        Loading {what}…
      </p>
    );
  return null;
}

export function PageTitle({ title, children }: { title: string; children?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · Roost`;
  }, [title]);
  return (
    <div class="page-head">
      <h1>{title}</h1>
      {children && <div class="page-actions">{children}</div>}
    </div>
  );
}

/**
 * A table in its scrolling wrapper: a caption (for screen readers only unless `captionShown`), a
 * heading per column (`false` leaves out a column shown only sometimes), and the rows as children.
 */
export function Table(props: {
  caption: ComponentChildren;
  captionShown?: boolean;
  columns: (ComponentChildren | false)[];
  class?: string;
  children: ComponentChildren;
}) {
  return (
    <div class="table-wrap">
      <table class={props.class}>
        <caption class={props.captionShown ? undefined : "sr-only"}>{props.caption}</caption>
        <thead>
          <tr>{props.columns.map((column) => column !== false && <th scope="col">{column}</th>)}</tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}
