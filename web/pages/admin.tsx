// Administration (admins and the owner): users (invite, roles, deactivate), source integrations,
// sign-in settings (Local Only or External Access, OIDC, trusted proxy), operator incidents, and
// every webhook delivery.
import { useState } from "preact/hooks";
import { ApiFailure, del, get, patch, post, put } from "../api.ts";
import { Field, FormError, LoadState, Notice, PageTitle, showingError, StatusBadge, TextField, Table, useField, useForm, useLoad } from "../components.tsx";
import { ago, dateTime } from "../format.ts";
import { location } from "../router.ts";
import { loadSetupStatus, me, roleAtLeast, setupStatus } from "../session.ts";
import type { Incident, Integration, OidcSettings, Role, TrustedProxySettings, User } from "../types.ts";
import { DeliveryLog } from "./delivery-log.tsx";

const ROLES: Role[] = ["developer", "maintainer", "admin", "owner"];

export function Admin() {
  const tab = new URLSearchParams(location.value.search).get("tab") ?? "users";
  const tabs: Array<[string, string]> = [
    ["users", "Users"],
    ["integrations", "Integrations"],
    ["sign-in", "Sign-in"],
    ["incidents", "Incidents"],
    ["deliveries", "Deliveries"],
  ];
  return (
    <section>
      <PageTitle title="Administration" />
      <nav class="tabs" aria-label="Administration sections">
        {tabs.map(([key, label]) => (
          <a key={key} href={`?tab=${key}`} aria-current={tab === key ? "page" : undefined}>
            {label}
          </a>
        ))}
      </nav>
      {tab === "users" && <Users />}
      {tab === "integrations" && <Integrations />}
      {tab === "sign-in" && <SignInSettings />}
      {tab === "incidents" && <Incidents />}
      {tab === "deliveries" && <AllDeliveries />}
    </section>
  );
}

function Users() {
  const state = useLoad(() => get<{ users: User[] }>("/v1/users?limit=200"), []);
  const [role, setRole] = useState<Role>("developer");
  const form = useForm();
  const { error, setError, submit } = form;
  const email = useField(form, "email");
  const mine = me.value!.credential.effective_role;
  const act = (work: () => Promise<unknown>) =>
    showingError(setError, async () => {
      await work();
      await state.reload();
    });
  const invite = submit(async () => {
    await post("/v1/users", { email: email.value, role });
    email.set("");
    await state.reload();
  });
  return (
    <>
      <form class="panel" aria-label="Invite a user" onSubmit={invite}>
        <h2>Invite a user</h2>
        <div class="row">
          <TextField label="E-mail address" {...email} type="email" required />
          <div class="field">
            <label for="invite-role">Role</label>
            <select id="invite-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
              {ROLES.filter((r) => roleAtLeast(mine, r)).map((r) => (
                <option value={r}>{r}</option>
              ))}
            </select>
          </div>
        </div>
        <FormError error={error} fields={["email"]} />
        <button type="submit">Invite</button>
      </form>
      <LoadState state={state} what="users" />
      {state.data && (
        <Table caption="Users" columns={["E-mail", "Id", "Role", "State", "Since", "Actions"]}>
          {state.data.users.map((u) => {
            const editable = roleAtLeast(mine, u.role) && u.id !== me.value!.user.id;
            return (
              <tr key={u.id}>
                <td>{u.email}</td>
                <td>
                  <code>{u.id}</code>
                </td>
                <td>
                  <label class="sr-only" for={`role-${u.id}`}>
                    Role of {u.email}
                  </label>
                  <select
                    id={`role-${u.id}`}
                    value={u.role}
                    disabled={!editable || !u.active}
                    onChange={(e) => void act(() => patch(`/v1/users/${encodeURIComponent(u.id)}`, { role: e.currentTarget.value }))}
                  >
                    {ROLES.filter((r) => roleAtLeast(mine, r) || r === u.role).map((r) => (
                      <option value={r}>{r}</option>
                    ))}
                  </select>
                </td>
                <td>
                  <StatusBadge status={u.active ? "active" : "deactivated"} />
                </td>
                <td title={dateTime(u.created_at)}>{ago(u.created_at)}</td>
                <td>
                  {editable && u.active && (
                    <button
                      type="button"
                      class="danger small"
                      aria-label={`Deactivate ${u.email}`}
                      onClick={() => confirm(`Deactivate ${u.email}?`) && void act(() => del(`/v1/users/${encodeURIComponent(u.id)}`))}
                    >
                      Deactivate
                    </button>
                  )}
                  {editable && !u.active && (
                    <button
                      type="button"
                      class="secondary small"
                      aria-label={`Reactivate ${u.email}`}
                      onClick={() => void act(() => patch(`/v1/users/${encodeURIComponent(u.id)}`, { active: true }))}
                    >
                      Reactivate
                    </button>
                  )}
                </td>
              </tr>
            );
          })}
        </Table>
      )}
    </>
  );
}

function Integrations() {
  const state = useLoad(() => get<{ integrations: Integration[] }>("/v1/integrations"), []);
  const [forge, setForge] = useState<Integration["provider"]>("gitlab");
  const [fields, setFields] = useState<Record<string, string>>({});
  const { error, setError, submit } = useForm();
  // What the last sync of each integration (on connecting, or Sync now) answered: how many
  // repositories it stored and what it had to leave out (a default branch over 255 characters…).
  const [syncs, setSyncs] = useState<Record<string, { repositories_synced: number; sync_warnings: string[] }>>({});
  const f = (name: string, label: string, type = "text") => (
    <TextField label={label} name={name} type={type} value={fields[name] ?? ""} onInput={(v) => setFields({ ...fields, [name]: v })} error={error} />
  );
  // A key is pasted as several lines: a textarea keeps its newlines (an <input> drops them, and the PEM breaks).
  const key = (name: string, label: string, hint: string) => (
    <Field label={label} name={name} error={error} hint={hint}>
      {(id, describedBy, invalid) => (
        <textarea
          id={id}
          name={name}
          class="pem"
          rows={6}
          spellcheck={false}
          autoComplete="off"
          value={fields[name] ?? ""}
          aria-describedby={describedBy}
          aria-invalid={invalid || undefined}
          onInput={(e) => setFields({ ...fields, [name]: e.currentTarget.value })}
        />
      )}
    </Field>
  );
  const connect = submit(async () => {
    const body: Record<string, string> = { provider: forge };
    for (const [k, v] of Object.entries(fields)) if (v) body[k] = v;
    const made = await post<{ integration: Integration; repositories_synced: number; sync_warnings: string[] }>("/v1/integrations", body);
    setSyncs({ ...syncs, [made.integration.id]: made });
    setFields({});
    await state.reload();
  });
  return (
    <>
      <form class="panel" aria-label="Connect a source host" onSubmit={connect}>
        <h2>Connect a source host</h2>
        <div class="field">
          <label for="provider">Host</label>
          <select id="provider" value={forge} onChange={(e) => setForge(e.currentTarget.value as typeof forge)}>
            <option value="gitlab">GitLab</option>
            <option value="github">GitHub (App)</option>
            <option value="gitea">Gitea / Forgejo</option>
            <option value="bitbucket">Bitbucket Cloud</option>
            <option value="git">Plain git remote</option>
          </select>
        </div>
        {f("name", "Name")}
        {forge === "git"
          ? f("url", "Repository URL")
          : f(
              "api_url",
              forge === "github"
                ? "API URL (default https://api.github.com)"
                : forge === "bitbucket"
                  ? "API URL (default https://api.bitbucket.org/2.0)"
                  : "Instance URL",
            )}
        {forge === "bitbucket" && f("workspace", "Workspace")}
        {(forge === "gitlab" || forge === "gitea" || forge === "bitbucket") &&
          f("access_token", forge === "bitbucket" ? "Workspace access token (or an app password below)" : "Access token", "password")}
        {forge === "bitbucket" && (
          <>
            {f("username", "User name (with an app password)")}
            {f("app_password", "App password (optional)", "password")}
          </>
        )}
        {forge === "git" && (
          <>
            {f("username", "User name (https, optional)")}
            {f("password", "Password or token (https, optional)", "password")}
            {key("ssh_private_key", "Deploy key (ssh, optional)", "A read-only deploy key in OpenSSH format, pasted whole.")}
          </>
        )}
        {forge === "github" && (
          <>
            {f("app_id", "App id")}
            {f("installation_id", "Installation id")}
            {key("private_key", "Private key (PEM)", "The whole file GitHub gave you, from -----BEGIN to END-----.")}
          </>
        )}
        {forge !== "gitlab" && f("webhook_secret", "Webhook secret", "password")}
        <FormError
          error={error}
          fields={[
            "name",
            "url",
            "api_url",
            "workspace",
            "access_token",
            "username",
            "app_password",
            "password",
            "ssh_private_key",
            "app_id",
            "installation_id",
            "private_key",
            "webhook_secret",
          ]}
        />
        <button type="submit">Connect</button>
      </form>
      <LoadState state={state} what="integrations" />
      <ul class="cards">
        {state.data?.integrations.map((i) => (
          <li key={i.id} class="project-card">
            <strong>{i.name}</strong>
            <span class="muted">
              {i.provider} · {i.web_url || i.api_url} · synced {ago(i.last_synced_at)}
            </span>
            {i.last_sync_failed && <Notice kind="error">{i.last_sync_error ?? "The last sync failed."}</Notice>}
            {syncs[i.id] && !i.last_sync_failed && (
              <Notice kind={syncs[i.id]!.sync_warnings.length ? "warning" : "success"}>
                Synced {syncs[i.id]!.repositories_synced} {syncs[i.id]!.repositories_synced === 1 ? "repository" : "repositories"}.
                {syncs[i.id]!.sync_warnings.length > 0 && (
                  <ul>
                    {syncs[i.id]!.sync_warnings.map((w) => (
                      <li key={w}>{w}</li>
                    ))}
                  </ul>
                )}
              </Notice>
            )}
            <div class="row">
              <button
                type="button"
                class="secondary small"
                onClick={async () => {
                  const synced = await post<{ repositories_synced: number; sync_warnings: string[] }>(
                    `/v1/integrations/${encodeURIComponent(i.id)}/sync`,
                  ).catch((e: ApiFailure) => void setError(e));
                  if (synced) setSyncs({ ...syncs, [i.id]: synced });
                  await state.reload();
                }}
              >
                Sync now
              </button>
              <button
                type="button"
                class="danger small"
                onClick={async () =>
                  confirm(`Remove ${i.name}?`) &&
                  (await del(`/v1/integrations/${encodeURIComponent(i.id)}`).catch((e: ApiFailure) => setError(e)), await state.reload())
                }
              >
                Remove
              </button>
            </div>
          </li>
        ))}
      </ul>
    </>
  );
}

function SignInSettings() {
  const oidc = useLoad(
    () => get<OidcSettings | { configured: false }>("/v1/settings/oidc").catch((e: ApiFailure) => (e.status === 404 ? null : Promise.reject(e))),
    [],
  );
  const proxy = useLoad(() => get<TrustedProxySettings | { configured: false }>("/v1/settings/trusted-proxy"), []);
  const o = oidc.data && "issuer" in oidc.data ? oidc.data : null;
  const p = proxy.data && "trusted_peers" in proxy.data ? proxy.data : null;
  const oidcForm = useForm();
  const { error, submit } = oidcForm;
  const issuer = useField(oidcForm, "issuer");
  const clientId = useField(oidcForm, "client_id");
  const secret = useField(oidcForm, "client_secret");
  const redirects = useField(oidcForm, "redirect_uris", `${window.location.origin}/auth/callback`);
  const proxyForm = useForm();
  const { error: proxyError, submit: submitProxy } = proxyForm;
  const peers = useField(proxyForm, "trusted_peers");
  const header = useField(proxyForm, "identity_header");
  const proxySecret = useField(proxyForm, "shared_secret");
  const [saved, setSaved] = useState("");
  const saveOidc = submit(async () => {
    await put("/v1/settings/oidc", {
      issuer: issuer.value || o?.issuer,
      client_id: clientId.value || o?.client_id,
      client_secret: secret.value,
      redirect_uris: redirects.value.split(/\s+/).filter(Boolean),
    });
    setSaved("OIDC settings saved.");
    await oidc.reload();
  });
  const saveProxy = submitProxy(async () => {
    await put("/v1/settings/trusted-proxy", {
      trusted_peers: (peers.value || p?.trusted_peers.join(" ") || "").split(/[\s,]+/).filter(Boolean),
      identity_header: header.value || undefined,
      shared_secret: proxySecret.value || undefined,
    });
    setSaved("Trusted proxy settings saved.");
    await proxy.reload();
  });
  return (
    <>
      <RuntimeMode oidcConfigured={o !== null} proxyConfigured={p !== null} />
      <form class="panel" aria-label="OpenID Connect" onSubmit={saveOidc}>
        <h2>OpenID Connect</h2>
        {o ? (
          <p>
            Issuer <code>{o.issuer}</code>, client <code>{o.client_id}</code>, callbacks {o.redirect_uris.join(", ")}; updated {ago(o.updated_at)}.
          </p>
        ) : (
          <p class="muted">Not configured.</p>
        )}
        <TextField label="Issuer URL" {...issuer} placeholder={o?.issuer} />
        <TextField label="Client ID" {...clientId} placeholder={o?.client_id} />
        <TextField label="Client secret" {...secret} type="password" required />
        <TextField label="Callback URLs (space-separated)" {...redirects} />
        <FormError error={error} fields={["issuer", "client_id", "client_secret", "redirect_uris"]} />
        <button type="submit">Save OIDC settings</button>
      </form>
      <form class="panel" aria-label="Trusted proxy" onSubmit={saveProxy}>
        <h2>Trusted proxy</h2>
        {p ? (
          <p>
            Peers {p.trusted_peers.join(", ")}, identity header <code>{p.identity_header}</code>, shared secret {p.shared_secret_set ? "set" : "not set"}.
          </p>
        ) : (
          <p class="muted">Not configured.</p>
        )}
        <TextField label="Proxy addresses (IPs or CIDRs)" {...peers} placeholder={p?.trusted_peers.join(", ")} />
        <TextField label="Identity header" {...header} placeholder={p?.identity_header ?? "X-Roost-User-Email"} />
        <TextField label="Shared secret (empty: keep)" {...proxySecret} type="password" />
        <FormError error={proxyError} fields={["trusted_peers", "identity_header", "shared_secret"]} />
        <button type="submit">Save trusted proxy settings</button>
      </form>
      {saved && <Notice kind="success">{saved}</Notice>}
    </>
  );
}

const METHOD_NAMES = { oidc: "OpenID Connect", trusted_proxy: "the trusted proxy" } as const;

/**
 * Local Only or External Access, switched by the owner with PUT /v1/settings/runtime-mode
 * (docs/external-access.md "Switching a running instance"). Roost checks the sign-in method before
 * it switches and changes nothing when a check fails; that answer is shown here.
 */
function RuntimeMode({ oidcConfigured, proxyConfigured }: { oidcConfigured: boolean; proxyConfigured: boolean }) {
  const status = setupStatus.value;
  const owner = me.value?.credential.effective_role === "owner";
  const [method, setMethod] = useState<"oidc" | "trusted_proxy">(status?.remote_auth_mode ?? "oidc");
  const [error, setError] = useState<ApiFailure | null>(null);
  const [done, setDone] = useState("");
  const [busy, setBusy] = useState(false);
  if (!status) return null;
  const remote = status.runtime_mode === "remote";
  const switchTo = async (body: { runtime_mode: "local" | "remote"; remote_auth_mode?: "oidc" | "trusted_proxy" }, question: string, success: string) => {
    if (!confirm(question)) return;
    setError(null);
    setDone("");
    setBusy(true);
    try {
      await put("/v1/settings/runtime-mode", body);
      await loadSetupStatus();
      setDone(success);
    } catch (err) {
      setError(err as ApiFailure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="panel"
      aria-label="How people reach Roost"
      onSubmit={(e) => {
        e.preventDefault();
        if (remote)
          void switchTo(
            { runtime_mode: "local" },
            "Switch to Local Only? Only this machine can sign in; open sessions stay valid and the External Access settings are kept.",
            "Roost is Local Only now.",
          );
        else
          void switchTo(
            { runtime_mode: "remote", remote_auth_mode: method },
            `Switch to External Access through ${METHOD_NAMES[method]}? People you invited sign in through it from then on; signing in on this machine then needs a capability from \`roost recover\`.`,
            `Roost is in External Access now: people sign in through ${METHOD_NAMES[method]}.`,
          );
      }}
    >
      <h2>How people reach Roost</h2>
      <p>
        Now: <strong>{remote ? "External Access" : "Local Only"}</strong>
        {remote ? `, signing in through ${METHOD_NAMES[status.remote_auth_mode ?? "oidc"]}.` : " — only this machine signs in."}
      </p>
      {!owner && <p class="muted">Only the owner can switch.</p>}
      {owner && !remote && (
        <>
          <fieldset>
            <legend>Switch to External Access, signing in through</legend>
            <label class="inline">
              <input type="radio" name="remote-method" value="oidc" checked={method === "oidc"} onChange={() => setMethod("oidc")} /> OpenID Connect{" "}
              {oidcConfigured ? "(configured below)" : "(configure it below first)"}
            </label>
            <label class="inline">
              <input type="radio" name="remote-method" value="trusted_proxy" checked={method === "trusted_proxy"} onChange={() => setMethod("trusted_proxy")} />{" "}
              a trusted proxy {proxyConfigured ? "(configured below)" : "(configure it below first)"}
            </label>
            {error?.forField("remote_auth_mode") && <p class="field-error">{error.forField("remote_auth_mode")}</p>}
          </fieldset>
          <p class="hint">
            Invite the people who will sign in under Users first. Roost checks the method before it switches (for OpenID Connect it fetches the provider's
            discovery document) and changes nothing when a check fails.
          </p>
        </>
      )}
      <FormError error={error} fields={["remote_auth_mode"]} />
      {done && <Notice kind="success">{done}</Notice>}
      {owner && (
        <button type="submit" disabled={busy}>
          {remote ? "Switch to Local Only" : "Switch to External Access"}
        </button>
      )}
    </form>
  );
}

function Incidents() {
  const state = useLoad(() => get<{ incidents: Incident[] }>("/v1/operator-incidents?limit=100"), [], 10000);
  return (
    <>
      <LoadState state={state} what="incidents" />
      {state.data?.incidents.length === 0 && <p class="muted">No incidents.</p>}
      <ul class="deliveries">
        {state.data?.incidents.map((i) => (
          <li key={i.id} class="panel">
            <div>
              <StatusBadge status={i.status} /> <strong>{i.severity}</strong> · {i.resource_kind} {i.resource_name} · {i.occurrence_count}× · last{" "}
              {ago(i.latest_occurrence_at)}
              {i.read_at === null && <span class="badge badge-queued">unread</span>}
            </div>
            <p>{i.message}</p>
            <p>
              <strong>What to do:</strong> {i.repair_action}
            </p>
            {i.read_at === null && (
              <button
                type="button"
                class="secondary small"
                onClick={async () => void (await post(`/v1/operator-incidents/${encodeURIComponent(i.id)}/read`), await state.reload())}
              >
                Mark as read
              </button>
            )}
          </li>
        ))}
      </ul>
    </>
  );
}

function AllDeliveries() {
  return <DeliveryLog path="/v1/webhook-deliveries" limit={100} />;
}
