// Build notifications of a project (docs/notifications.md), for its maintainers: the list with
// each one's health, create and edit (Slack-compatible webhook, signed webhook, e-mail over SMTP)
// with write-only secret fields (a webhook URL, a signing secret, an SMTP password are never
// returned; left empty on an edit, the stored one is kept), and each one's recent deliveries.
import { useState } from "preact/hooks";
import { ApiFailure, get, patch, post } from "../api.ts";
import {
  ConfirmButton,
  FormError,
  LoadState,
  removeFromList,
  Notice,
  StatusBadge,
  SubmitOrCancel,
  TextAreaField,
  TextField,
  useField,
  useForm,
  useLoad,
} from "../components.tsx";
import { ago, dateTime } from "../format.ts";
import type { Project } from "../types.ts";
import type { Notification, NotificationDelivery } from "../settings-types.ts";

const EVENTS = ["failed", "fixed", "succeeded", "canceled", "approval_requested"] as const;
const CHANNELS = { slack: "Slack-compatible webhook", webhook: "Signed webhook (JSON)", email: "E-mail (SMTP)" } as const;
type Channel = keyof typeof CHANNELS;
const lines = (text: string) =>
  text
    .split(/[\n,]/)
    .map((l) => l.trim())
    .filter(Boolean);

export function NotificationsTab({ project }: { project: Project }) {
  const base = `/v1/projects/${encodeURIComponent(project.id)}/notifications`;
  const list = useLoad(() => get<{ notifications: Notification[] }>(base), [base], 15_000);
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<ApiFailure | null>(null);
  const done = async () => {
    await list.reload();
    setEditing(null);
  };
  return (
    <>
      <p class="muted">
        Tell a team about finished builds in a chat channel, over a signed webhook or by e-mail. URLs, signing secrets and passwords are stored encrypted and
        never shown again.
      </p>
      <LoadState state={list} what="notifications" />
      {list.data && list.data.notifications.length === 0 && editing !== "new" && <p class="muted">No notifications yet.</p>}
      <ul class="plain notifications">
        {list.data?.notifications.map((n) =>
          editing === n.id ? (
            <li key={n.id}>
              <NotificationForm base={base} notification={n} done={done} />
            </li>
          ) : (
            <li key={n.id} class="panel notification">
              <div>
                <strong>{n.name}</strong> · {CHANNELS[n.channel]} {summary(n)} · <Health n={n} />
              </div>
              <div class="muted">
                {n.enabled ? "enabled" : "disabled"} · on {n.events.join(", ")} · {n.branches.length > 0 ? `branches ${n.branches.join(", ")}` : "every branch"}
              </div>
              {n.health.failing && n.health.last_error && <Notice kind="warning">{`Last delivery failed: ${n.health.last_error}`}</Notice>}
              <Deliveries base={base} notification={n} />
              {editing === null && (
                <div class="row">
                  <button type="button" class="secondary small" aria-label={`Edit ${n.name}`} onClick={() => setEditing(n.id)}>
                    Edit
                  </button>
                  <ConfirmButton
                    danger
                    label="Delete"
                    ariaLabel={`Delete ${n.name}`}
                    question={`Delete the notification ${n.name}?`}
                    act={() => removeFromList(`${base}/${encodeURIComponent(n.id)}`, setError, list.reload)}
                  />
                </div>
              )}
            </li>
          ),
        )}
      </ul>
      <FormError error={error} />
      {editing === null && (
        <button type="button" onClick={() => setEditing("new")}>
          New notification
        </button>
      )}
      {editing === "new" && <NotificationForm base={base} done={done} />}
    </>
  );
}

function summary(n: Notification): string {
  const c = n.config as Record<string, unknown>;
  if (n.channel === "email") return `via ${String(c.host)}:${String(c.port)} to ${Array.isArray(c.to) ? c.to.join(", ") : ""}`;
  return c.url_host ? `to ${String(c.url_host)}` : "";
}

function Health({ n }: { n: Notification }) {
  if (n.health.failing) return <StatusBadge status="failed" />;
  if (n.health.last_delivered_at !== null)
    return (
      <span title={dateTime(n.health.last_delivered_at)}>
        <StatusBadge status="succeeded" /> delivered {ago(n.health.last_delivered_at)}
      </span>
    );
  return <span class="muted">nothing sent yet</span>;
}

function Deliveries({ base, notification }: { base: string; notification: Notification }) {
  const [open, setOpen] = useState(false);
  return (
    <details class="notification-deliveries" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Recent deliveries of {notification.name}</summary>
      {open && <DeliveryList url={`${base}/${encodeURIComponent(notification.id)}/deliveries?limit=20`} />}
    </details>
  );
}

function DeliveryList({ url }: { url: string }) {
  const list = useLoad(() => get<{ deliveries: NotificationDelivery[] }>(url), [url], 5000);
  if (!list.data) return <LoadState state={list} what="deliveries" />;
  if (list.data.deliveries.length === 0) return <p class="muted">No deliveries yet.</p>;
  const statusWord = { pending: "queued", delivered: "succeeded", failed: "failed" } as const;
  return (
    <ul class="plain">
      {list.data.deliveries.map((d) => (
        <li key={d.id}>
          <StatusBadge status={statusWord[d.status]} /> {d.status} · build {d.event} · <span title={dateTime(d.created_at)}>{ago(d.created_at)}</span> ·{" "}
          {d.attempts} {d.attempts === 1 ? "attempt" : "attempts"}
          {d.status === "pending" && d.next_attempt_at !== null && ` · next attempt ${dateTime(d.next_attempt_at)}`}
          {d.last_error && ` · ${d.last_error}`}
        </li>
      ))}
    </ul>
  );
}

function NotificationForm({ base, notification, done }: { base: string; notification?: Notification; done: () => Promise<void> }) {
  const c = (notification?.config ?? {}) as Record<string, unknown>;
  const editing = notification !== undefined;
  const [channel, setChannel] = useState<Channel>(notification?.channel ?? "slack");
  const [events, setEvents] = useState<string[]>(notification?.events ?? ["failed", "fixed"]);
  const [enabled, setEnabled] = useState(notification?.enabled ?? true);
  const [security, setSecurity] = useState(String(c.security ?? "starttls"));
  const form = useForm();
  const { error, submit } = form;
  const name = useField(form, "name", notification?.name ?? "");
  const branches = useField(form, "branches", (notification?.branches ?? []).join("\n"));
  const url = useField(form, "url");
  const secret = useField(form, "secret");
  const host = useField(form, "host", String(c.host ?? ""));
  const port = useField(form, "port", String(c.port ?? 587));
  const username = useField(form, "username", c.username == null ? "" : String(c.username));
  const password = useField(form, "password");
  const from = useField(form, "from", String(c.from ?? ""));
  const to = useField(form, "to", Array.isArray(c.to) ? c.to.join("\n") : "");
  const tlsCa = useField(form, "tls_ca", c.tls_ca == null ? "" : String(c.tls_ca));
  const keep = editing ? "Leave empty to keep the stored one." : undefined;

  const channelBody = (): Record<string, unknown> => {
    if (channel === "slack") return editing && !url.value ? {} : { slack: { url: url.value } };
    if (channel === "webhook") {
      const w: Record<string, string> = {};
      if (url.value || !editing) w.url = url.value;
      if (secret.value || !editing) w.secret = secret.value;
      return editing && Object.keys(w).length === 0 ? {} : { webhook: w };
    }
    const email: Record<string, unknown> = {
      host: host.value,
      port: Number(port.value),
      security,
      username: username.value || null,
      from: from.value,
      to: lines(to.value),
      tls_ca: tlsCa.value.trim() ? tlsCa.value : null,
    };
    if (password.value) email.password = password.value;
    return { email };
  };
  /** The write-only URL of a Slack-compatible or signed webhook; on an edit, the host it is stored for. */
  const urlField = (label: string, hintWhenNew: string) => (
    <TextField
      label={label}
      {...url}
      type="password"
      autoComplete="off"
      required={!editing}
      hint={editing ? `Stored for ${String(c.url_host ?? "a host")}. ${keep}` : hintWhenNew}
    />
  );
  const label = editing ? `Edit notification ${notification.name}` : "New notification";
  const save = submit(async () => {
    const body = { name: name.value, events, branches: lines(branches.value), enabled, ...channelBody() };
    if (editing) await patch(`${base}/${encodeURIComponent(notification.id)}`, body);
    else await post(base, { ...body, channel });
    await done();
  });
  return (
    <form class="panel" aria-label={label} onSubmit={save}>
      <h3>{label}</h3>
      <TextField label="Name" {...name} required />
      {!editing && (
        <div class="field">
          <label for="notification-channel">Channel</label>
          <select id="notification-channel" value={channel} onChange={(e) => setChannel(e.currentTarget.value as Channel)}>
            {Object.entries(CHANNELS).map(([value, text]) => (
              <option value={value}>{text}</option>
            ))}
          </select>
        </div>
      )}
      <fieldset>
        <legend>Events</legend>
        {EVENTS.map((ev) => (
          <label class="inline">
            <input
              type="checkbox"
              checked={events.includes(ev)}
              onChange={(e) => setEvents(e.currentTarget.checked ? [...events, ev] : events.filter((x) => x !== ev))}
            />{" "}
            {ev}
          </label>
        ))}
        <p class="hint">
          fixed: the first success after a failure of the same pipeline and branch. approval_requested: a deployment waits for approval (an e-mail also goes to
          its approvers).
        </p>
        {error?.forField("events") && <p class="field-error">{error.forField("events")}</p>}
      </fieldset>
      <TextAreaField label="Branches (one pattern a line; empty: every branch)" {...branches} />
      <label class="inline">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Enabled
      </label>
      {channel === "slack" &&
        urlField("Incoming webhook URL (write-only)", "Slack, Mattermost, Rocket.Chat or Discord's …/slack URL; it is its own credential.")}
      {channel === "webhook" && (
        <>
          {urlField("URL (write-only)", "Roost POSTs JSON signed with X-Roost-Signature-256.")}
          <TextField
            label="Signing secret (write-only, at least 16 characters)"
            {...secret}
            type="password"
            autoComplete="new-password"
            required={!editing}
            hint={keep}
          />
        </>
      )}
      {channel === "email" && (
        <>
          <div class="row">
            <TextField label="SMTP server" {...host} required />
            <TextField label="Port" {...port} type="number" required />
            <div class="field">
              <label for="notification-security">Security</label>
              <select id="notification-security" value={security} onChange={(e) => setSecurity(e.currentTarget.value)}>
                <option value="starttls">STARTTLS (587)</option>
                <option value="tls">TLS (465)</option>
                <option value="none">none (unencrypted)</option>
              </select>
            </div>
          </div>
          <div class="row">
            <TextField label="User name (empty: no authentication)" {...username} autoComplete="off" />
            <TextField
              label="Password (write-only)"
              {...password}
              type="password"
              autoComplete="new-password"
              hint={editing ? "Leave empty to keep the stored one; a changed server needs it again." : undefined}
            />
          </div>
          <TextField label="From" {...from} type="email" required />
          <TextAreaField label="To (one address a line)" {...to} required />
          <TextAreaField label="Trusted CA certificates (PEM; empty: the system's)" {...tlsCa} />
        </>
      )}
      <FormError error={error} fields={["name", "events", "branches", "url", "secret", "host", "port", "username", "password", "from", "to", "tls_ca"]} />
      <SubmitOrCancel label={editing ? "Save notification" : "Create notification"} cancel={() => void done()} />
    </form>
  );
}
