// Stream tokens: read-only, one build, short-lived, hashed (docs/runners.md "Live logs").
import type { Executor } from "./client.ts";
import { num, one, str } from "./client.ts";
import { mintSecret, parseSecret, secretMatches } from "../auth/secrets.ts";

/** A stream token must be used to open a stream within 5 minutes; an open stream lives on. */
export const STREAM_TOKEN_TTL_SECONDS = 300;

export async function mintStreamToken(db: Executor, buildId: string, userId: string, now: number): Promise<{ token: string; expires_at: number }> {
  const minted = mintSecret("st");
  const expiresAt = now + STREAM_TOKEN_TTL_SECONDS;
  await db.execute({
    sql: "INSERT INTO stream_tokens (id, secret_hash, build_id, user_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
    args: [minted.id, minted.hash, buildId, userId, now, expiresAt],
  });
  await db.execute({ sql: "DELETE FROM stream_tokens WHERE expires_at <= ?", args: [now - 3600] });
  return { token: minted.token, expires_at: expiresAt };
}

export async function buildForStreamToken(db: Executor, token: string, now: number): Promise<string | null> {
  const parsed = parseSecret("st", token);
  if (!parsed) return null;
  const row = await one(db, "SELECT * FROM stream_tokens WHERE id = ?", [parsed.id]);
  if (!row || !secretMatches(parsed.secret, str(row, "secret_hash")) || num(row, "expires_at") <= now) return null;
  return str(row, "build_id");
}
