// User sessions (docs/api.md "Authentication"): 24 hours, stored as a hash, deleted on logout.
import type { Executor } from "../db/client.ts";
import { num, one, run, str } from "../db/client.ts";
import { mintSecret, parseSecret, secretMatches } from "./secrets.ts";
import { toUser, type User } from "./users.ts";
import { VerifiedReads } from "../db/verified-reads.ts";

export const SESSION_TTL_SECONDS = 24 * 60 * 60;

export type SessionMethod = "local" | "oidc" | "trusted_proxy";

export interface SessionRow {
  id: string;
  user_id: string;
  method: SessionMethod;
  created_at: number;
  expires_at: number;
}

export async function createSession(db: Executor, userId: string, method: SessionMethod, now: number): Promise<{ token: string; session: SessionRow }> {
  const minted = mintSecret("sess");
  const session: SessionRow = { id: minted.id, user_id: userId, method, created_at: now, expires_at: now + SESSION_TTL_SECONDS };
  await db.execute({
    sql: "INSERT INTO sessions (id, secret_hash, user_id, method, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
    args: [session.id, minted.hash, userId, method, now, session.expires_at],
  });
  return { token: minted.token, session };
}

/** The live session a token names, or null when it is unknown, forged or expired. */
export async function validateSessionToken(db: Executor, token: string, now: number): Promise<SessionRow | null> {
  const parsed = parseSecret("sess", token);
  if (!parsed) return null;
  const row = await one(db, "SELECT * FROM sessions WHERE id = ?", [parsed.id]);
  if (!row || !secretMatches(parsed.secret, str(row, "secret_hash"))) return null;
  if (num(row, "expires_at") <= now) return null;
  return {
    id: str(row, "id"),
    user_id: str(row, "user_id"),
    method: str(row, "method") as SessionMethod,
    created_at: num(row, "created_at"),
    expires_at: num(row, "expires_at"),
  };
}

/** A session with its user as read by its id, and its secret's stored hash. */
interface SessionWithUser {
  session: SessionRow;
  user: User;
  secretHash: string;
}

/** The sessions presented lately, as read by id, while the database has not changed (lib/db/verified-reads.ts). */
const presented = new VerifiedReads<SessionWithUser>();

/**
 * The live session a token names with its user: one read by primary key, or the same row
 * remembered while the database's data version says nothing has been committed since
 * (lib/db/verified-reads.ts), so a logout or a deactivation by any daemon answers the very next
 * request; null when the token is unknown, forged or expired. The secret is compared with the
 * stored hash on every request, in constant time. The user may be inactive: the caller refuses that.
 */
export async function findSessionBySecret(db: Executor, token: string, now: number): Promise<{ session: SessionRow; user: User } | null> {
  const parsed = parseSecret("sess", token);
  if (!parsed) return null;
  const found = await presented.get(db, parsed.id, () => readSessionWithUser(db, parsed.id));
  if (!found || !secretMatches(parsed.secret, found.secretHash)) return null;
  if (found.session.expires_at <= now) return null;
  return { session: found.session, user: found.user };
}

/**
 * The live session a token names with its user, as remembered (lib/db/verified-reads.ts), without
 * asking the database whether anything has been committed since, with what the caller confirms it
 * by (VerifiedReads.remembered). Null when it is not remembered so, its secret does not match (in
 * constant time) or it has expired.
 */
export function rememberedSession(
  db: Executor,
  token: string,
  now: number,
): { session: SessionRow; user: User; taken: { version: number; reads: number } } | null {
  const parsed = parseSecret("sess", token);
  const remembered = parsed && presented.remembered(db, parsed.id);
  if (!parsed || !remembered || !secretMatches(parsed.secret, remembered.value.secretHash)) return null;
  if (remembered.value.session.expires_at <= now) return null;
  return { session: remembered.value.session, user: remembered.value.user, taken: { version: remembered.version, reads: remembered.reads } };
}

async function readSessionWithUser(db: Executor, id: string): Promise<SessionWithUser | null> {
  // `= +?` as in findLiveSessionUser.
  const row = await one(
    db,
    `SELECT u.*, s.id AS session_id, s.secret_hash AS session_secret_hash, s.method AS session_method, s.created_at AS session_created_at,
            s.expires_at AS session_expires_at
     FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = +?`,
    [id],
  );
  if (!row) return null;
  // Frozen: the same objects answer every request until the database changes.
  const user = Object.freeze(toUser(row));
  const session: SessionRow = Object.freeze({
    id: str(row, "session_id"),
    user_id: user.id,
    method: str(row, "session_method") as SessionMethod,
    created_at: num(row, "session_created_at"),
    expires_at: num(row, "session_expires_at"),
  });
  return { session, user, secretHash: str(row, "session_secret_hash") };
}

/**
 * The user of a session that still works (not logged out or expired, its user active), by the
 * session's id: how a stream opened with the session asks again, in one read by primary key.
 */
export async function findLiveSessionUser(db: Executor, sessionId: string, now: number): Promise<{ user: User; expires_at: number } | null> {
  // `= +?`: the same plan, but bun:sqlite runs a join filtered by a bare `= ?` about ten times slower (docs/benchmarks.md, "The request path").
  const row = await one(
    db,
    "SELECT u.*, s.expires_at AS session_expires_at FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = +? AND s.expires_at > ? AND u.active = 1",
    [sessionId, now],
  );
  return row ? { user: toUser(row), expires_at: num(row, "session_expires_at") } : null;
}

export async function deleteSession(db: Executor, id: string): Promise<void> {
  await run(db, "DELETE FROM sessions WHERE id = ?", [id]);
}

/** Ends every session of a user: on deactivation and on a change of role. */
export async function deleteUserSessions(db: Executor, userId: string): Promise<number> {
  return run(db, "DELETE FROM sessions WHERE user_id = ?", [userId]);
}

export async function deleteExpiredSessions(db: Executor, now: number): Promise<number> {
  return run(db, "DELETE FROM sessions WHERE expires_at <= ?", [now]);
}
