// First run (README "First run"), driven by GET /v1/setup/status: Local Only (the first sign-in
// from this machine creates the owner) or External Access (setup token → OIDC or trusted proxy →
// owner → complete). Each error the setup endpoints answer is shown next to its field.
import { useState } from "preact/hooks";
import { ApiFailure, api } from "../api.ts";
import { FormError, Notice, TextField, useForm } from "../components.tsx";
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
  const [email, setEmail] = useState("");
  const { error, busy, submit } = useForm();
  const createOwner = submit(
    async () => {
      await api("POST", "/v1/auth/local/login", { body: { email }, quiet401: true });
      await loadSetupStatus();
      await loadMe();
      navigate("/", { replace: true });
    },
    (err) => asFailure(err, { email_required: "email", user_not_found: "email" }),
  );
  return (
    <form class="card-form" aria-label="Local Only: create the owner" onSubmit={createOwner}>
      <h2>Create the owner</h2>
      <TextField
        label="Your e-mail address"
        name="email"
        type="email"
        value={email}
        onInput={setEmail}
        error={error}
        required
        autoComplete="email"
        hint="The owner can invite everyone else later."
      />
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
  const [ownerEmail, setOwnerEmail] = useState("");
  // OIDC
  const [issuer, setIssuer] = useState("");
  const [clientId, setClientId] = useState("");
  const [clientSecret, setClientSecret] = useState("");
  const [redirect, setRedirect] = useState(`${window.location.origin}/auth/callback`);
  // trusted proxy
  const [peers, setPeers] = useState("");
  const [header, setHeader] = useState("X-Roost-User-Email");
  const [secret, setSecret] = useState("");

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
                await call("PUT", "/v1/setup/oidc", { issuer, client_id: clientId, client_secret: clientSecret, redirect_uris: [redirect] });
              else
                await call("PUT", "/v1/setup/trusted-proxy", {
                  trusted_peers: peers.split(/[\s,]+/).filter(Boolean),
                  identity_header: header,
                  shared_secret: secret || undefined,
                });
              await loadSetupStatus();
            },
            { oidc_discovery_error: "issuer" },
          );
        else if (step === "owner")
          void run(
            async () => {
              await call("POST", "/v1/setup/owner", { email: ownerEmail });
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
          <TextField label="Issuer URL" name="issuer" value={issuer} onInput={setIssuer} error={error} required placeholder="https://id.example.com" />
          <TextField label="Client ID" name="client_id" value={clientId} onInput={setClientId} error={error} required />
          <TextField
            label="Client secret"
            name="client_secret"
            type="password"
            value={clientSecret}
            onInput={setClientSecret}
            error={error}
            required
            autoComplete="off"
          />
          <TextField label="Callback URL (register it at the provider)" name="redirect_uris" value={redirect} onInput={setRedirect} error={error} required />
        </>
      )}
      {step === "configure" && status.remote_auth_mode === "trusted_proxy" && (
        <>
          <TextField
            label="Proxy addresses (IPs or CIDRs, comma-separated)"
            name="trusted_peers"
            value={peers}
            onInput={setPeers}
            error={error}
            required
            placeholder="10.0.0.5, 192.168.1.0/24"
          />
          <TextField label="Identity header" name="identity_header" value={header} onInput={setHeader} error={error} />
          <TextField
            label="Shared secret (required for loopback or broad ranges)"
            name="shared_secret"
            type="password"
            value={secret}
            onInput={setSecret}
            error={error}
            autoComplete="off"
          />
        </>
      )}
      {step === "owner" && (
        <TextField label="Owner's e-mail address" name="email" type="email" value={ownerEmail} onInput={setOwnerEmail} error={error} required />
      )}
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
