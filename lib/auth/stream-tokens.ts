// Stream tokens: read-only, bound to one build and the credential (session or API token) of the
// user who asked for it, short-lived, hashed (docs/runners.md "Live logs"). They travel in the URL
// (EventSource sends no headers), so they may end up in a proxy's or browser's history: the short
// life bounds what a copy is worth, and the stream lasts only as long as the minting credential.
import type { Executor } from "../db/client.ts";
import { num, one, str, strOrNull } from "../db/client.ts";
import { mintSecret, parseSecret, secretMatches } from "./secrets.ts";
import type { CredentialRef } from "./reauthenticate.ts";

/** A stream token must be used to open a stream within a minute; an open stream lives on while the credential that minted it works. */
export const STREAM_TOKEN_TTL_SECONDS = 60;

export interface StreamGrant {
  build_id: string;
  user_id: string;
  /** The session or API token the token was minted with. */
  credential: CredentialRef;
}

export async function mintStreamToken(
  db: Executor,
  buildId: string,
  userId: string,
  credential: CredentialRef,
  now: number,
): Promise<{ token: string; expires_at: number }> {
  const minted = mintSecret("st");
  const expiresAt = now + STREAM_TOKEN_TTL_SECONDS;
  await db.execute({
    sql: "INSERT INTO stream_tokens (id, secret_hash, build_id, user_id, session_id, api_token_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    args: [
      minted.id,
      minted.hash,
      buildId,
      userId,
      credential.kind === "session" ? credential.id : null,
      credential.kind === "api_token" ? credential.id : null,
      now,
      expiresAt,
    ],
  });
  await db.execute({ sql: "DELETE FROM stream_tokens WHERE expires_at <= ?", args: [now - 3600] });
  return { token: minted.token, expires_at: expiresAt };
}

/** What a valid, unexpired stream token was issued for, or null. */
export async function findStreamGrant(db: Executor, token: string, now: number): Promise<StreamGrant | null> {
  const parsed = parseSecret("st", token);
  if (!parsed) return null;
  const row = await one(db, "SELECT * FROM stream_tokens WHERE id = ?", [parsed.id]);
  if (!row || !secretMatches(parsed.secret, str(row, "secret_hash")) || num(row, "expires_at") <= now) return null;
  const sessionId = strOrNull(row, "session_id");
  const apiTokenId = strOrNull(row, "api_token_id");
  const credential: CredentialRef | null = sessionId ? { kind: "session", id: sessionId } : apiTokenId ? { kind: "api_token", id: apiTokenId } : null;
  if (!credential) return null;
  return { build_id: str(row, "build_id"), user_id: str(row, "user_id"), credential };
}
