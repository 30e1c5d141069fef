// POST /v1/auth/oidc/callback (docs/external-access.md "The flow"): finishes the flow that
// GET /v1/auth/oidc/start began in this browser, verifies the ID token (OIDC Core §3.1.3.7) and
// signs the invited user in. Each numbered step answers its own code (docs/external-access.md "Errors").
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { ApiError, fail } from "../../lib/http/errors.ts";
import { json } from "../../lib/http/io.ts";
import { SessionResult } from "../../lib/schemas/shared.ts";
import { DecryptionError } from "../../lib/crypto/secret-box.ts";
import { consumePending, type PendingAuthorization } from "../../lib/auth/oidc-pending.ts";
import { OIDC_CLIENT_SECRET_PURPOSE, getOidcSettings } from "../../lib/auth/sign-in-settings-store.ts";
import { bindOidcIdentity, findUserByEmail, type User } from "../../lib/auth/users.ts";
import { isDatabaseUnreachable } from "../../lib/db/client.ts";
import { BINDING_COOKIE, discover, exchangeCode, fillEmailFromUserInfo, readBindingCookie, verifyIdToken } from "../../lib/auth/oidc.ts";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { constantTimeEqualStrings } from "../../lib/auth/secrets.ts";
import { completeLogin } from "../../lib/auth/login.ts";
import { requireReadyInstance } from "../../lib/auth/ready.ts";
import { applyBrowserSession } from "../../lib/auth/browser-session.ts";

export const OidcCallbackBody = z
  .object({
    code: z.string().min(1).max(2000).describe("the authorization code"),
    state: z.string().min(1).max(200).describe("the state from start, as the provider returned it"),
  })
  .strict();

export const endpoint = defineEndpoint({
  operationId: "oidc_callback",
  summary: "Finish signing in with the OpenID Provider",
  description: "Requires the __Host-roost_oidc cookie set by start in the same browser (login CSRF defence).",
  authNote: "needs the browser-binding cookie set by start",
  body: OidcCallbackBody,
  response: SessionResult,
  browserSession: "set",
  errors: [
    "invalid_state",
    "auth_expired",
    "user_not_found",
    "setup_incomplete",
    "oidc_not_configured",
    "decryption_error",
    "session_error",
    "store_error",
    "oidc_discovery_error",
    "token_exchange_error",
    "missing_id_token",
    "id_token_verification_error",
    "missing_email",
    "email_not_verified",
    "oidc_identity_mismatch",
  ],
  async handle({ body }, ctx) {
    // 1. Ready.
    const instance = await requireReadyInstance(ctx.db);

    // 2. The state, taken out (single use), from the browser that started it, within 10 minutes.
    // Checked before the provider settings: a state this instance never issued is the caller's
    // mistake (400), whatever the instance is configured for, never a server error.
    const pending: PendingAuthorization | null = await store(() => consumePending(ctx.db, sha256Hex(body.state)));
    if (!pending) fail("invalid_state", "This sign-in is unknown or was already used; start again.");
    const binding = readBindingCookie(ctx.request);
    if (!binding || !constantTimeEqualStrings(sha256Hex(binding), pending.binding_hash)) {
      fail("invalid_state", "This sign-in was started in another browser; start again here.");
    }
    const now = ctx.clock.now();
    if (now >= pending.expires_at) fail("auth_expired", "This sign-in is older than 10 minutes; start again.");

    // Still in OIDC mode with a provider (an admin may have changed it since start).
    const settings = await getOidcSettings(ctx.db);
    if (instance.remote_auth_mode !== "oidc" || !settings) fail("oidc_not_configured");

    // 3. The client secret, before any request to the provider.
    let clientSecret: string;
    try {
      clientSecret = await ctx.secrets.open(settings.client_secret_sealed, OIDC_CLIENT_SECRET_PURPOSE);
    } catch (error) {
      if (!(error instanceof DecryptionError)) throw error;
      fail("decryption_error", "The stored client secret cannot be decrypted with this instance's key; set it again.");
    }

    // 4. Code for tokens (with the PKCE verifier), then the ID token verified; e-mail from it or UserInfo.
    const discovery = await discover(ctx, settings.issuer);
    const tokens = await exchangeCode(
      discovery,
      { client_id: settings.client_id, client_secret: clientSecret, redirect_uri: pending.redirect_uri },
      body,
      pending.code_verifier,
    );
    const verified = await verifyIdToken(ctx, discovery, { ...settings, client_secret: clientSecret }, tokens, pending.nonce, now);
    const identity = await fillEmailFromUserInfo(verified.identity, discovery, settings.client_id, verified.access_token);
    if (identity.email === null) fail("missing_email", "The identity provider gave no e-mail address for this account.");
    if (identity.email_verified !== true) fail("email_not_verified", "The identity provider has not verified this account's e-mail address.");

    // 5. An invited, active user; bound to (iss, sub) at first login, refused under another subject later.
    const email = identity.email;
    const user: User | null = await store(() => findUserByEmail(ctx.db, email));
    if (!user || !user.active) fail("user_not_found", "No active user has this e-mail address; ask an admin for an invitation.");
    if (user.oidc_subject !== null && (user.oidc_subject !== identity.subject || user.oidc_issuer !== identity.issuer)) {
      ctx.log.warn("oidc subject mismatch", { request_id: ctx.requestId, user_id: user.id });
      fail("oidc_identity_mismatch", "This e-mail address is bound to another identity at the provider.");
    }
    if (user.oidc_subject === null) {
      await store(() => bindOidcIdentity(ctx.db, user.id, identity.issuer, identity.subject, now));
      user.oidc_issuer = identity.issuer;
      user.oidc_subject = identity.subject;
    }

    // 6. A new session.
    let result: Awaited<ReturnType<typeof completeLogin>>;
    try {
      result = await completeLogin(ctx, user, "oidc");
    } catch (error) {
      if (error instanceof ApiError || isDatabaseUnreachable(error)) throw error;
      ctx.log.error("oidc session creation failed", { request_id: ctx.requestId, error: String(error) });
      fail("session_error", "The session could not be created; try again.");
    }
    const response = json(result, 200, { "set-cookie": `${BINDING_COOKIE}=; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=0`, "cache-control": "no-store" });
    // The route answers its own Response (to clear the binding cookie), so the browser session
    // cookie that lib/http/app.ts adds to the other sign-in routes' answers is added here.
    applyBrowserSession("set", result, ctx.request, ctx, response);
    return response;
  },
});

/** A database step of the callback: any failure is 500 store_error. */
async function store<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ApiError || isDatabaseUnreachable(error)) throw error;
    fail("store_error", "A database operation failed during sign-in; try again.");
  }
}
