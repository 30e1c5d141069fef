// First run (README "First run"), driven by GET /v1/setup/status: Local Only (the first sign-in
// from this machine creates the owner) or External Access (setup token → OIDC or trusted proxy →
// owner → complete). Each error the setup endpoints answer is shown next to its field.
import { useState } from "preact/hooks";
import { ApiFailure, api } from "../api.ts";
import { FormError, Notice, TextField, useField, useForm } from "../components.tsx";
import { navigate } from "../router.ts";
import { loadMe, loadSetupStatus, setupStatus } from "../session.ts";

const TOKEN_ERRORS = { invalid_setup_token: "setup_token", missing_auth: "setup_token", wrong_credential: "setup_token" };

function asFailure(error: unknown, byCode: Record<string, string> = {}): ApiFailure {
  if (error instanceof ApiFailure) return error.placed(byCode);
  return new ApiFailure(0, "error", String(error));
}

export function SetupWizard() {
  const status = setupStatus.value!;
  const [mode, setMode] = useState<"local" | "remote">(status.runtime_mode);
  const [setupToken, setSetupToken] = useState("");
  const remoteChosen = status.runtime_mode_chosen && status.runtime_mode === "remote";
  return (
    <section class="wizard">
      <h1>Set up Roost</h1>
      <p class="lead">Roost is new here. Choose how people will reach it; the owner can switch later under Administration → Sign-in.</p>
      {!remoteChosen && (
        <fieldset class="choice">
          <legend>How will people reach Roost?</legend>
          <label class={mode === "local" ? "card selected" : "card"}>
            <input type="radio" name="mode" value="local" checked={mode === "local"} onChange={() => setMode("local")} />
            <span>
              <strong>Local Only</strong>
              <span class="muted"> — only from this machine. You become the owner by signing in here now.</span>
            </span>
          </label>
          <label class={mode === "remote" ? "card selected" : "card"}>
            <input type="radio" name="mode" value="remote" checked={mode === "remote"} onChange={() => setMode("remote")} />
            <span>
              <strong>External Access</strong>
              <span class="muted">
                {" "}
                — a team signs in through your OpenID Provider or a trusted reverse proxy. Needs the setup token from the daemon's data directory.
              </span>
            </span>
          </label>
        </fieldset>
      )}
      {!remoteChosen && mode === "local" && <LocalOwner />}
      {(remoteChosen || mode === "remote") && <ExternalAccess token={setupToken} setToken={setSetupToken} />}
    </section>
  );
}

function LocalOwner() {
  const form = useForm();
  const { error, busy, submit } = form;
  const email = useField(form, "email");
  const createOwner = submit(
    async () => {
      await api("POST", "/v1/auth/local/login", { body: { email: email.value }, quiet401: true });
      await loadSetupStatus();
      await loadMe();
      navigate("/", { replace: true });
    },
    (err) => asFailure(err, { email_required: "email", user_not_found: "email" }),
  );
  return (
    <form class="card-form" aria-label="Local Only: create the owner" onSubmit={createOwner}>
      <h2>Create the owner</h2>
      <TextField label="Your e-mail address" {...email} type="email" required autoComplete="email" hint="The owner can invite everyone else later." />
      <FormError error={error} fields={["email"]} />
      <button type="submit" disabled={busy}>
        {busy ? "Signing in…" : "Create owner and sign in"}
      </button>
    </form>
  );
}

function ExternalAccess({ token, setToken }: { token: string; setToken: (t: string) => void }) {
  const status = setupStatus.value!;
  const [authMode, setAuthMode] = useState<"oidc" | "trusted_proxy">(status.remote_auth_mode ?? "oidc");
  const [error, setError] = useState<ApiFailure | null>(null);
  const [busy, setBusy] = useState(false);
  const form = { error };
  const ownerEmail = useField(form, "email");
  // OIDC
  const issuer = useField(form, "issuer");
  const clientId = useField(form, "client_id");
  const clientSecret = useField(form, "client_secret");
  const redirect = useField(form, "redirect_uris", `${window.location.origin}/auth/callback`);
  // trusted proxy
  const peers = useField(form, "trusted_peers");
  const header = useField(form, "identity_header", "X-Roost-User-Email");
  const secret = useField(form, "shared_secret");

  // The server says what comes next (GET /v1/setup/status next_step), so a reload mid-way resumes
  // at the right step and a step that failed is asked again.
  const step =
    !status.runtime_mode_chosen || status.next_step === "preferences"
      ? "preferences"
      : status.next_step === "configure_oidc" || status.next_step === "configure_trusted_proxy"
        ? "configure"
        : status.next_step === "owner"
          ? "owner"
          : "complete";
  const run = async (work: () => Promise<void>, byCode: Record<string, string> = {}) => {
    setBusy(true);
    setError(null);
    try {
      await work();
    } catch (err) {
      setError(asFailure(err, { ...TOKEN_ERRORS, ...byCode }));
    } finally {
      setBusy(false);
    }
  };
  const call = (method: string, path: string, body?: unknown) => api(method, path, { body, bearer: token, quiet401: true });

  return (
    <form
      class="card-form"
      aria-label="External Access setup"
      onSubmit={(e) => {
        e.preventDefault();
        if (step === "preferences")
          void run(async () => {
            await call("POST", "/v1/setup/preferences", { runtime_mode: "remote", remote_auth_mode: authMode });
            await loadSetupStatus();
          });
        else if (step === "configure")
          void run(
            async () => {
              if (authMode === "oidc")
                await call("PUT", "/v1/setup/oidc", {
                  issuer: issuer.value,
                  client_id: clientId.value,
                  client_secret: clientSecret.value,
                  redirect_uris: [redirect.value],
                });
              else
                await call("PUT", "/v1/setup/trusted-proxy", {
                  trusted_peers: peers.value.split(/[\s,]+/).filter(Boolean),
                  identity_header: header.value,
                  shared_secret: secret.value || undefined,
                });
              await loadSetupStatus();
            },
            { oidc_discovery_error: "issuer" },
          );
        else if (step === "owner")
          void run(
            async () => {
              await call("POST", "/v1/setup/owner", { email: ownerEmail.value });
              await loadSetupStatus();
            },
            { owner_exists: "email" },
          );
        else
          void run(async () => {
            await call("POST", "/v1/setup/complete");
            await loadSetupStatus();
            navigate("/sign-in", { replace: true });
          });
      }}
    >
      <h2>External Access</h2>
      <ol class="steps" aria-label="Progress">
        {["preferences", "configure", "owner", "complete"].map((s, i) => (
          <li aria-current={s === step ? "step" : undefined} class={s === step ? "current" : ""}>
            {i + 1}. {{ preferences: "Sign-in method", configure: "Configure it", owner: "Owner", complete: "Finish" }[s]}
          </li>
        ))}
      </ol>
      <TextField
        label="Setup token"
        name="setup_token"
        type="password"
        value={token}
        onInput={setToken}
        error={error}
        required
        autoComplete="off"
        hint={
          <>
            The daemon wrote it to <code>setup-token</code> in its data directory (or run <code>roost recover setup-token</code>).
          </>
        }
      />
      {step === "preferences" && (
        <fieldset>
          <legend>How will people sign in?</legend>
          <label class="inline">
            <input type="radio" name="auth" checked={authMode === "oidc"} onChange={() => setAuthMode("oidc")} /> OpenID Connect provider
          </label>
          <label class="inline">
            <input type="radio" name="auth" checked={authMode === "trusted_proxy"} onChange={() => setAuthMode("trusted_proxy")} /> Trusted reverse proxy
            (identity header)
          </label>
        </fieldset>
      )}
      {step === "configure" && status.remote_auth_mode === "oidc" && (
        <>
          <TextField label="Issuer URL" {...issuer} required placeholder="https://id.example.com" />
          <TextField label="Client ID" {...clientId} required />
          <TextField label="Client secret" {...clientSecret} type="password" required autoComplete="off" />
          <TextField label="Callback URL (register it at the provider)" {...redirect} required />
        </>
      )}
      {step === "configure" && status.remote_auth_mode === "trusted_proxy" && (
        <>
          <TextField label="Proxy addresses (IPs or CIDRs, comma-separated)" {...peers} required placeholder="10.0.0.5, 192.168.1.0/24" />
          <TextField label="Identity header" {...header} />
          <TextField label="Shared secret (required for loopback or broad ranges)" {...secret} type="password" autoComplete="off" />
        </>
      )}
      {step === "owner" && <TextField label="Owner's e-mail address" {...ownerEmail} type="email" required />}
      {step === "complete" && <Notice>Everything is in place. Finishing makes Roost ready; the owner then signs in.</Notice>}
      <FormError
        error={error}
        fields={[
          "setup_token",
          "issuer",
          "client_id",
          "client_secret",
          "redirect_uris",
          "trusted_peers",
          "identity_header",
          "shared_secret",
          "email",
          "remote_auth_mode",
        ]}
      />
      <button type="submit" disabled={busy}>
        {busy ? "Working…" : step === "complete" ? "Finish setup" : "Continue"}
      </button>
    </form>
  );
}
