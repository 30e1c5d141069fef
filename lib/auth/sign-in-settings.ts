// Storing the External Access sign-in settings, shared by the setup endpoints and the admin
// settings endpoints: the client secret is sealed, the proxy secret hashed.
import type { z } from "zod";
import type { RequestContext } from "../http/context.ts";
import { defineEndpoint } from "../http/route.ts";
import type { Principal } from "./principal.ts";
import type { Executor } from "../db/client.ts";
import type { SecretBox } from "../crypto/secret-box.ts";
import {
  OIDC_CLIENT_SECRET_PURPOSE,
  getTrustedProxySettings,
  saveOidcSettings,
  saveTrustedProxySettings,
  toPublicOidcSettings,
  toPublicTrustedProxySettings,
} from "./sign-in-settings-store.ts";
import { DEFAULT_ID_TOKEN_ALGS, normalizeScopes, OidcSettingsBody, PublicOidcSettings } from "./oidc.ts";
import { PublicTrustedProxySettings, resolveTrustedProxySettings, TrustedProxySettingsBody } from "./trusted-proxy.ts";

export async function storeOidcSettings(db: Executor, secrets: SecretBox, body: z.output<typeof OidcSettingsBody>, now: number) {
  const saved = await saveOidcSettings(
    db,
    {
      issuer: body.issuer,
      client_id: body.client_id,
      client_secret_sealed: await secrets.seal(body.client_secret, OIDC_CLIENT_SECRET_PURPOSE),
      scopes: normalizeScopes(body.scopes),
      redirect_uris: body.redirect_uris,
      id_token_algs: body.id_token_algs ?? DEFAULT_ID_TOKEN_ALGS,
    },
    now,
  );
  return toPublicOidcSettings(saved);
}

export async function storeTrustedProxySettings(db: Executor, body: z.output<typeof TrustedProxySettingsBody>, now: number) {
  const resolved = resolveTrustedProxySettings(body, await getTrustedProxySettings(db));
  return toPublicTrustedProxySettings(await saveTrustedProxySettings(db, resolved, now));
}

/** Setup routes (setup token) have no signed-in user; the settings routes (admin) do. */
type SettingsContext = RequestContext & { principal?: Principal };

/** PUT /v1/setup/oidc and PUT /v1/settings/oidc: one replacement of the provider settings, during setup or after it. */
export function oidcSettingsEndpoint(operation: { operationId: string; summary: string }) {
  return defineEndpoint({
    ...operation,
    body: OidcSettingsBody,
    response: PublicOidcSettings,
    async handle({ body }, ctx: SettingsContext) {
      ctx.log.info("oidc settings changed", { request_id: ctx.requestId, user_id: ctx.principal?.user.id, issuer: body.issuer });
      return storeOidcSettings(ctx.db, ctx.secrets, body, ctx.clock.now());
    },
  });
}

/** PUT /v1/setup/trusted-proxy and PUT /v1/settings/trusted-proxy: likewise for the trusted proxy. */
export function trustedProxySettingsEndpoint(operation: { operationId: string; summary: string }) {
  return defineEndpoint({
    ...operation,
    body: TrustedProxySettingsBody,
    response: PublicTrustedProxySettings,
    async handle({ body }, ctx: SettingsContext) {
      ctx.log.info("trusted proxy settings changed", { request_id: ctx.requestId, user_id: ctx.principal?.user.id, trusted_peers: body.trusted_peers });
      return storeTrustedProxySettings(ctx.db, body, ctx.clock.now());
    },
  });
}
