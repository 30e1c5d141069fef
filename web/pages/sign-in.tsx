// Sign-in in the instance's way: Local Only (a one-time capability from `roost login` on the host),
// OIDC (start → the provider → /auth/callback posts code and state), or a trusted proxy (the app
// calls the login route itself; the proxy adds the identity). After sign-in the person goes back
// to the page they were on (?next=, kept across the provider's redirect in sessionStorage).
import { useEffect, useState } from "preact/hooks";
import { ApiFailure, api, sessionExpired } from "../api.ts";
import { FormError, Notice, TextField, useField, useForm } from "../components.tsx";
import { location, navigate } from "../router.ts";
import { loadMe, setupStatus } from "../session.ts";

const NEXT_KEY = "roost.next";

function nextPath(): string {
  const next =
    new URLSearchParams(location.value.search).get("next") ??
    (location.value.path.startsWith("/sign-in") ? "/" : location.value.path + location.value.search + location.value.hash);
  // Only a path of this app: never an absolute URL (an open redirect).
  return next.startsWith("/") && !next.startsWith("//") ? next : "/";
}

async function finish(next: string): Promise<void> {
  await loadMe();
  sessionExpired.value = false;
  navigate(next, { replace: true });
}

export function SignIn({ expired }: { expired: boolean }) {
  const status = setupStatus.value!;
  const next = nextPath();
  const signedOut = new URLSearchParams(location.value.search).has("signed_out");
  useEffect(() => {
    document.title = "Sign in · Roost";
  }, []);
  return (
    <section class="sign-in">
      <h1>Sign in to Roost</h1>
      {expired && <Notice kind="warning">Your session ended. Sign in again to go back to the page you were on.</Notice>}
      {signedOut && <Notice>You signed out.</Notice>}
      {status.runtime_mode === "remote" && status.remote_auth_mode === "oidc" && <OidcSignIn next={next} />}
      {status.runtime_mode === "remote" && status.remote_auth_mode === "trusted_proxy" && <ProxySignIn next={next} />}
      {status.runtime_mode === "local" ? (
        <LocalSignIn next={next} />
      ) : (
        <details class="recovery">
          <summary>Sign in with a recovery capability (operators)</summary>
          <LocalSignIn next={next} />
        </details>
      )}
    </section>
  );
}

/**
 * What `roost login` printed, pasted whole or in part: the bare capability, or the curl command
 * around it (whose e-mail is used when the form's is empty).
 */
function readPastedCapability(text: string): { capability: string; email: string | null } {
  const capability = /roost_rcv_[0-9A-Za-z]+/.exec(text)?.[0] ?? text.trim();
  const email = /"email"\s*:\s*"([^"]+)"/.exec(text)?.[1] ?? null;
  return { capability, email };
}

function LocalSignIn({ next }: { next: string }) {
  const form = useForm();
  const { error, busy, submit } = form;
  const email = useField(form, "email");
  const capability = useField(form, "recovery_capability");
  const remote = setupStatus.value?.runtime_mode === "remote";
  const signIn = submit(
    async () => {
      const pasted = readPastedCapability(capability.value);
      await api("POST", "/v1/auth/local/login", {
        body: { email: email.value || pasted.email || undefined, recovery_capability: pasted.capability },
        quiet401: true,
      });
      await finish(next);
    },
    (err) =>
      err instanceof ApiFailure
        ? err.placed({
            email_required: "email",
            user_not_found: "email",
            recovery_capability_invalid: "recovery_capability",
            local_capability_required: "recovery_capability",
            recovery_capability_required: "recovery_capability",
          })
        : null,
  );
  return (
    <form class="card-form" aria-label="Local sign-in" onSubmit={signIn}>
      <p>
        On the machine Roost runs on, run <code>{remote ? "roost recover" : "roost login --email you@example.com"}</code> as the daemon's user (in a checkout of
        Roost: <code>{remote ? "npm run roost -- recover" : "npm run roost -- login --email you@example.com"}</code>) and paste the one-time capability it
        prints (<code>roost_rcv_…</code>, valid 5 minutes), or the whole <code>curl</code> command it prints.
      </p>
      <TextField label="E-mail address (optional with one user)" {...email} type="email" autoComplete="email" />
      <TextField
        label="One-time capability (or the whole curl command)"
        {...capability}
        type="password"
        required
        autoComplete="off"
        placeholder="roost_rcv_…"
      />
      <FormError error={error} fields={["email", "recovery_capability"]} />
      <button type="submit" disabled={busy}>
        {busy ? "Signing in…" : "Sign in"}
      </button>
    </form>
  );
}

function OidcSignIn({ next }: { next: string }) {
  const [error, setError] = useState<ApiFailure | null>(null);
  return (
    <div class="card-form">
      <button
        type="button"
        onClick={async () => {
          setError(null);
          try {
            sessionStorage.setItem(NEXT_KEY, next);
            const redirect = `${window.location.origin}/auth/callback`;
            const started = await api<{ authorization_url: string }>("GET", `/v1/auth/oidc/start?redirect_uri=${encodeURIComponent(redirect)}`, {
              quiet401: true,
            });
            window.location.assign(started.authorization_url);
          } catch (err) {
            setError(err as ApiFailure);
          }
        }}
      >
        Sign in with your identity provider
      </button>
      <FormError error={error} />
    </div>
  );
}

/** The provider sends the browser here with code and state; the app posts them to the API. */
export function OidcCallback() {
  const [error, setError] = useState<ApiFailure | null>(null);
  useEffect(() => {
    const params = new URLSearchParams(location.value.search);
    const code = params.get("code");
    const state = params.get("state");
    if (!code || !state) {
      setError(new ApiFailure(0, "oidc_error", params.get("error_description") ?? params.get("error") ?? "The identity provider sent no code."));
      return;
    }
    const next = sessionStorage.getItem(NEXT_KEY) ?? "/";
    sessionStorage.removeItem(NEXT_KEY);
    api("POST", "/v1/auth/oidc/callback", { body: { code, state }, quiet401: true })
      .then(() => finish(next.startsWith("/") && !next.startsWith("//") ? next : "/"))
      .catch((err: ApiFailure) => setError(err));
  }, []);
  return (
    <section>
      <h1>Signing in…</h1>
      {error ? (
        <>
          <Notice kind="error">{error.message}</Notice>
          <p>
            <a href="/sign-in">Try again</a>
          </p>
        </>
      ) : (
        <p role="status">Checking the answer of your identity provider…</p>
      )}
    </section>
  );
}

function ProxySignIn({ next }: { next: string }) {
  const [error, setError] = useState<ApiFailure | null>(null);
  const signIn = async () => {
    setError(null);
    try {
      await api("POST", "/v1/auth/trusted-proxy/login", { quiet401: true });
      await finish(next);
    } catch (err) {
      setError(err as ApiFailure);
    }
  };
  useEffect(() => {
    // Behind the proxy the person is always known: sign in at once, except right after signing out.
    if (!new URLSearchParams(location.value.search).has("signed_out")) void signIn();
  }, []);
  return (
    <div class="card-form">
      <p>Your reverse proxy tells Roost who you are.</p>
      <FormError error={error} />
      <button type="button" onClick={signIn}>
        Continue
      </button>
    </div>
  );
}
