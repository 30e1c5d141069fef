// GET /v1/auth/oidc/start (docs/external-access.md "The flow"): begins an authorization-code flow with
// PKCE S256, a state and a nonce of 256 random bits each. The verifier and the nonce stay in the
// database; the browser gets a __Host- cookie that binds the state to it (RFC 9700 §2.1.1).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { fail } from "../../lib/http/errors.ts";
import { json } from "../../lib/http/io.ts";
import { inTransaction } from "../../lib/db/client.ts";
import { getOidcSettings } from "../../lib/auth/sign-in-settings-store.ts";
import { PENDING_LIFETIME_SECONDS, PENDING_LIMIT, evictExpiredPending, insertPending, trimPeerPending } from "../../lib/auth/oidc-pending.ts";
import { bindingCookie, buildAuthorizationUrl, discover, randomToken, readBindingCookie } from "../../lib/auth/oidc.ts";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { requireReadyInstance } from "../../lib/auth/ready.ts";

export const OidcStartQuery = z.object({
  redirect_uri: z
    .string()
    .max(2000)
    .optional()
    .describe("frontend callback; must be on the configured allow-list, else the standard callback (the first one) is used"),
});

export const OidcStartResult = z.object({
  authorization_url: z.string().describe("where to send the browser"),
  state: z.string().describe("returned by the provider to the callback; single-use"),
});

export const endpoint = defineEndpoint({
  operationId: "oidc_start",
  summary: "Begin signing in with the OpenID Provider",
  description: "Also sets the __Host-roost_oidc cookie (HttpOnly, SameSite=Lax) that the callback requires.",
  authNote: "only when OIDC is the configured sign-in",
  query: OidcStartQuery,
  response: OidcStartResult,
  errors: ["setup_incomplete", "too_many_pending", "oidc_not_configured", "oidc_discovery_error"],
  async handle({ query }, ctx) {
    // 1. Ready, in OIDC mode, with a provider.
    const instance = await requireReadyInstance(ctx.db);
    const settings = await getOidcSettings(ctx.db);
    if (instance.remote_auth_mode !== "oidc" || !settings) fail("oidc_not_configured");

    // 2. The redirect URI only from the allow-list (exact match, RFC 9700 §2.1): no open redirect.
    const redirectUri =
      query.redirect_uri !== undefined && settings.redirect_uris.includes(query.redirect_uri) ? query.redirect_uri : settings.redirect_uris[0]!;
    const discovery = await discover(ctx, settings.issuer);
    const started = await buildAuthorizationUrl(discovery, settings.client_id, redirectUri, settings.scopes);

    // 3. One browser keeps one binding across tabs; a new browser gets a new one.
    const presented = readBindingCookie(ctx.request);
    const binding = presented && /^[A-Za-z0-9_-]{43}$/.test(presented) ? presented : randomToken();

    // 4. Caps: this peer's oldest beyond its own cap go, then everything expired, then the global limit.
    const now = ctx.clock.now();
    const peer = ctx.peer ?? "unknown";
    await inTransaction(ctx.db, async (tx) => {
      await trimPeerPending(tx, peer);
      const pending = await evictExpiredPending(tx, now);
      if (pending >= PENDING_LIMIT) fail("too_many_pending", "Too many sign-ins are in progress; try again in a few minutes.");
      await insertPending(tx, {
        state_hash: sha256Hex(started.state),
        binding_hash: sha256Hex(binding),
        nonce: started.nonce,
        code_verifier: started.code_verifier,
        redirect_uri: redirectUri,
        peer,
        created_at: now,
        expires_at: now + PENDING_LIFETIME_SECONDS,
      });
    });
    return json({ authorization_url: started.authorization_url, state: started.state }, 200, {
      "set-cookie": bindingCookie(binding, PENDING_LIFETIME_SECONDS),
      "cache-control": "no-store",
    });
  },
});
