// Pending OIDC authorizations between start and callback (docs/external-access.md
// "Limits on pending authorizations"): at most 1000, each valid 10 minutes, kept in the database so that any daemon process can
// finish a flow another one started.
import type { Executor } from "../db/client.ts";
import { num, one, run, str } from "../db/client.ts";

export const PENDING_LIMIT = 1000;
export const PENDING_LIFETIME_SECONDS = 600;
/**
 * One peer address may hold at most this many pending authorizations; its oldest is evicted to
 * make room. Without it one client could fill the global 1000 and lock every user out of
 * sign-in.
 */
export const PENDING_PER_PEER = 20;

export interface PendingAuthorization {
  state_hash: string;
  binding_hash: string;
  nonce: string;
  code_verifier: string;
  redirect_uri: string;
  peer: string;
  created_at: number;
  expires_at: number;
}

/** Deletes what has expired; returns how many are still pending. */
export async function evictExpiredPending(db: Executor, now: number): Promise<number> {
  await run(db, "DELETE FROM oidc_pending WHERE expires_at <= ?", [now]);
  const row = await one(db, "SELECT COUNT(*) AS n FROM oidc_pending");
  return Number(row?.n ?? 0);
}

/** Keeps the peer under its cap by evicting its oldest entries (room for one more). */
export async function trimPeerPending(db: Executor, peer: string): Promise<void> {
  await run(
    db,
    `DELETE FROM oidc_pending WHERE state_hash IN (
       SELECT state_hash FROM oidc_pending WHERE peer = +? ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET +?)`,
    [peer, PENDING_PER_PEER - 1],
  );
}

export async function insertPending(db: Executor, p: PendingAuthorization): Promise<void> {
  await run(
    db,
    `INSERT INTO oidc_pending (state_hash, binding_hash, nonce, code_verifier, redirect_uri, peer, created_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    [p.state_hash, p.binding_hash, p.nonce, p.code_verifier, p.redirect_uri, p.peer, p.created_at, p.expires_at],
  );
}

/** Takes the pending authorization out, so a state (and its nonce) is usable once only. */
export async function consumePending(db: Executor, stateHash: string): Promise<PendingAuthorization | null> {
  const row = await one(db, "DELETE FROM oidc_pending WHERE state_hash = ? RETURNING *", [stateHash]);
  if (!row) return null;
  return {
    state_hash: str(row, "state_hash"),
    binding_hash: str(row, "binding_hash"),
    nonce: str(row, "nonce"),
    code_verifier: str(row, "code_verifier"),
    redirect_uri: str(row, "redirect_uri"),
    peer: str(row, "peer"),
    created_at: num(row, "created_at"),
    expires_at: num(row, "expires_at"),
  };
}
