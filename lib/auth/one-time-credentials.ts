// Credentials that prove access to the host rather than to an account: the setup token and the
// recovery capability. Both are minted only where a local operator can read them (a 0600 file in
// the data dir, or the 0600 Unix management socket), stored hashed, and expire.
//
// Neither outlives the moment it was made for (docs/operations.md "One-time credentials"):
// - only the newest setup token works: minting one (at every start while setup is incomplete, or
//   with `roost recover setup-token`) deletes every earlier one, and a token with a newer one
//   beside it is refused anyway;
// - a recovery capability works once, for five minutes, on every daemon of the database: the row
//   (its secret hashed) is the capability, not the process that minted it, so a capability minted
//   through one host's management socket signs in on another, and restarting any daemon voids none.
import type { Executor } from "../db/client.ts";
import { num, one, run, str } from "../db/client.ts";
import { mintSecret, parseSecret, secretMatches } from "./secrets.ts";

/** A setup token lasts a day; a fresh one is minted at start-up while setup is incomplete. */
export const SETUP_TOKEN_TTL_SECONDS = 24 * 60 * 60;
/** A recovery capability lasts five minutes and works once. */
export const RECOVERY_CAPABILITY_TTL_SECONDS = 5 * 60;

/** Mints a credential of `kind` and stores it hashed through `insert` (id, secret_hash, created_at, expires_at), for `ttlSeconds`. */
async function mintStored(
  db: Executor,
  kind: "setup" | "rcv",
  insert: string,
  ttlSeconds: number,
  now: number,
): Promise<{ id: string; token: string; expires_at: number }> {
  const minted = mintSecret(kind);
  const expiresAt = now + ttlSeconds;
  await run(db, insert, [minted.id, minted.hash, now, expiresAt]);
  return { id: minted.id, token: minted.token, expires_at: expiresAt };
}

export async function mintSetupToken(db: Executor, now: number): Promise<{ token: string; expires_at: number }> {
  const { id, token, expires_at } = await mintStored(
    db,
    "setup",
    "INSERT INTO setup_tokens (id, secret_hash, created_at, expires_at) VALUES (?, ?, ?, ?)",
    SETUP_TOKEN_TTL_SECONDS,
    now,
  );
  // "Newest" is the insertion order (rowid), so of two mints at once exactly the later one survives.
  await run(db, "DELETE FROM setup_tokens WHERE rowid < (SELECT rowid FROM setup_tokens WHERE id = ?)", [id]);
  return { token, expires_at };
}

/** The expiry of a valid setup token, or null. The newest setup token stays valid for every setup step until setup completes. */
export async function checkSetupToken(db: Executor, token: string, now: number): Promise<{ id: string; expires_at: number } | null> {
  const parsed = parseSecret("setup", token);
  if (!parsed) return null;
  const row = await one(db, "SELECT * FROM setup_tokens s WHERE id = ? AND NOT EXISTS (SELECT 1 FROM setup_tokens n WHERE n.rowid > s.rowid)", [parsed.id]);
  if (!row || !secretMatches(parsed.secret, str(row, "secret_hash"))) return null;
  if (num(row, "expires_at") <= now) return null;
  return { id: parsed.id, expires_at: num(row, "expires_at") };
}

/** Setup is over: no setup token works again. */
export async function deleteSetupTokens(db: Executor): Promise<void> {
  await run(db, "DELETE FROM setup_tokens");
}

export async function mintRecoveryCapability(db: Executor, now: number): Promise<{ token: string; expires_at: number }> {
  const { token, expires_at } = await mintStored(
    db,
    "rcv",
    "INSERT INTO recovery_capabilities (id, secret_hash, created_at, expires_at) VALUES (?, ?, ?, ?)",
    RECOVERY_CAPABILITY_TTL_SECONDS,
    now,
  );
  await run(db, "DELETE FROM recovery_capabilities WHERE expires_at <= ?", [now - 24 * 60 * 60]);
  return { token, expires_at };
}

/**
 * Spends a recovery capability: true exactly once for a valid, unexpired one, whichever daemon
 * minted it. The conditional UPDATE makes two concurrent uses (through two daemons too) succeed at
 * most once; run it in the transaction that signs in, so a refused sign-in leaves it unspent.
 */
export async function consumeRecoveryCapability(db: Executor, token: string, now: number): Promise<boolean> {
  const parsed = parseSecret("rcv", token);
  if (!parsed) return false;
  const row = await one(db, "SELECT * FROM recovery_capabilities WHERE id = ?", [parsed.id]);
  if (!row || !secretMatches(parsed.secret, str(row, "secret_hash"))) return false;
  const spent = await run(db, "UPDATE recovery_capabilities SET used_at = ? WHERE id = ? AND used_at IS NULL AND expires_at > ?", [now, parsed.id, now]);
  return spent === 1;
}
