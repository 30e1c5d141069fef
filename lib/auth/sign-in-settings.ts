// Storing the External Access sign-in settings, shared by the setup endpoints and the admin
// settings endpoints: the client secret is sealed, the proxy secret hashed.
import type { z } from "zod";
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
import { DEFAULT_ID_TOKEN_ALGS, normalizeScopes, type OidcSettingsBody } from "./oidc.ts";
import { resolveTrustedProxySettings, type TrustedProxySettingsBody } from "./trusted-proxy.ts";

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
