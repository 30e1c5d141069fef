// External Access sign-in settings (docs/external-access.md): the OIDC provider and the trusted
// proxy, one row each. Neither secret leaves through an encoder: the client secret is sealed
// (lib/crypto/secret-box.ts), the proxy's shared secret is kept only as SHA-256 hex.
import type { Row } from "../db/database.ts";
import type { Executor } from "../db/client.ts";
import { num, one, str, strOrNull } from "../db/client.ts";

export interface OidcSettings {
  issuer: string;
  client_id: string;
  client_secret_sealed: string;
  scopes: string[];
  redirect_uris: string[];
  id_token_algs: string[];
  updated_at: number;
}

export interface TrustedProxySettings {
  trusted_peers: string[];
  identity_header: string;
  shared_secret_hash: string | null;
  updated_at: number;
}

/** The purpose the client secret is sealed for (the secret box's associated data). */
export const OIDC_CLIENT_SECRET_PURPOSE = "oidc_settings.client_secret";

function toOidcSettings(row: Row): OidcSettings {
  return {
    issuer: str(row, "issuer"),
    client_id: str(row, "client_id"),
    client_secret_sealed: str(row, "client_secret_sealed"),
    scopes: JSON.parse(str(row, "scopes")) as string[],
    redirect_uris: JSON.parse(str(row, "redirect_uris")) as string[],
    id_token_algs: JSON.parse(str(row, "id_token_algs")) as string[],
    updated_at: num(row, "updated_at"),
  };
}

export async function getOidcSettings(db: Executor): Promise<OidcSettings | null> {
  const row = await one(db, "SELECT * FROM oidc_settings WHERE id = 1");
  return row ? toOidcSettings(row) : null;
}

export async function saveOidcSettings(db: Executor, s: Omit<OidcSettings, "updated_at">, now: number): Promise<OidcSettings> {
  const row = await one(
    db,
    `INSERT INTO oidc_settings (id, issuer, client_id, client_secret_sealed, scopes, redirect_uris, id_token_algs, updated_at)
     VALUES (1, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET issuer = excluded.issuer, client_id = excluded.client_id,
       client_secret_sealed = excluded.client_secret_sealed, scopes = excluded.scopes,
       redirect_uris = excluded.redirect_uris, id_token_algs = excluded.id_token_algs, updated_at = excluded.updated_at
     RETURNING *`,
    [s.issuer, s.client_id, s.client_secret_sealed, JSON.stringify(s.scopes), JSON.stringify(s.redirect_uris), JSON.stringify(s.id_token_algs), now],
  );
  return toOidcSettings(row!);
}

/** What the settings endpoints show: never the client secret, sealed or not. */
export function toPublicOidcSettings(s: OidcSettings) {
  return {
    issuer: s.issuer,
    client_id: s.client_id,
    client_secret_set: true,
    scopes: s.scopes,
    redirect_uris: s.redirect_uris,
    id_token_algs: s.id_token_algs,
    updated_at: s.updated_at,
  };
}

function toTrustedProxySettings(row: Row): TrustedProxySettings {
  return {
    trusted_peers: JSON.parse(str(row, "trusted_peers")) as string[],
    identity_header: str(row, "identity_header"),
    shared_secret_hash: strOrNull(row, "shared_secret_hash"),
    updated_at: num(row, "updated_at"),
  };
}

export async function getTrustedProxySettings(db: Executor): Promise<TrustedProxySettings | null> {
  const row = await one(db, "SELECT * FROM trusted_proxy_settings WHERE id = 1");
  return row ? toTrustedProxySettings(row) : null;
}

export async function saveTrustedProxySettings(db: Executor, s: Omit<TrustedProxySettings, "updated_at">, now: number): Promise<TrustedProxySettings> {
  const row = await one(
    db,
    `INSERT INTO trusted_proxy_settings (id, trusted_peers, identity_header, shared_secret_hash, updated_at)
     VALUES (1, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET trusted_peers = excluded.trusted_peers, identity_header = excluded.identity_header,
       shared_secret_hash = excluded.shared_secret_hash, updated_at = excluded.updated_at
     RETURNING *`,
    [JSON.stringify(s.trusted_peers), s.identity_header, s.shared_secret_hash, now],
  );
  return toTrustedProxySettings(row!);
}

export function toPublicTrustedProxySettings(s: TrustedProxySettings) {
  return {
    trusted_peers: s.trusted_peers,
    identity_header: s.identity_header,
    shared_secret_set: s.shared_secret_hash !== null,
    updated_at: s.updated_at,
  };
}
