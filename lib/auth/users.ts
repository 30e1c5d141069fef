// Users: invited by e-mail, each with one instance role (docs/authorization.md "Roles").
import type { Executor } from "../db/client.ts";
import { all, likePattern, one, type Row } from "../db/client.ts";
import type { Role } from "./roles.ts";
import { newId } from "./secrets.ts";
import type { PublicUser, WireOf } from "../schemas/shared.ts";

/**
 * A users row (or a row whose columns include a users row's, as a join reads it) as a User. Every
 * authenticated request maps one, so it is read property by property rather than through
 * rowMapper's shared column readers (lib/auth/api-tokens.ts toRow says why).
 */
export function toUser(row: Row): User {
  return {
    id: String(row.id),
    email: String(row.email),
    role: String(row.role) as Role,
    active: Number(row.active) === 1,
    oidc_issuer: row.oidc_issuer === null || row.oidc_issuer === undefined ? null : String(row.oidc_issuer),
    oidc_subject: row.oidc_subject === null || row.oidc_subject === undefined ? null : String(row.oidc_subject),
    avatar_url: String(row.avatar_url),
    invited_by: row.invited_by === null || row.invited_by === undefined ? null : String(row.invited_by),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
    deactivated_at: row.deactivated_at === null || row.deactivated_at === undefined ? null : Number(row.deactivated_at),
  };
}
export interface User {
  id: string;
  email: string;
  role: Role;
  active: boolean;
  oidc_issuer: string | null;
  oidc_subject: string | null;
  avatar_url: string;
  invited_by: string | null;
  created_at: number;
  updated_at: number;
  deactivated_at: number | null;
}

/** E-mail addresses are compared case-insensitively; they are stored lower-cased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export async function findUserById(db: Executor, id: string): Promise<User | null> {
  const row = await one(db, "SELECT * FROM users WHERE id = ?", [id]);
  return row ? toUser(row) : null;
}

export async function findUserByEmail(db: Executor, email: string): Promise<User | null> {
  const row = await one(db, "SELECT * FROM users WHERE email = ?", [normalizeEmail(email)]);
  return row ? toUser(row) : null;
}

export async function listActiveUsers(db: Executor, limit: number): Promise<User[]> {
  return (await all(db, "SELECT * FROM users WHERE active = 1 ORDER BY created_at, id LIMIT +?", [limit])).map(toUser);
}

export async function countActiveOwners(db: Executor): Promise<number> {
  const row = await one(db, "SELECT COUNT(*) AS n FROM users WHERE active = 1 AND role = 'owner'");
  return Number(row?.n ?? 0);
}

export async function insertUser(db: Executor, fields: { email: string; role: Role; invitedBy: string | null; now: number }): Promise<User> {
  const id = newId();
  const row = await one(
    db,
    `INSERT INTO users (id, email, role, active, invited_by, created_at, updated_at)
     VALUES (?, ?, ?, 1, ?, ?, ?) RETURNING *`,
    [id, normalizeEmail(fields.email), fields.role, fields.invitedBy, fields.now, fields.now],
  );
  return toUser(row!);
}

export interface UserPage {
  users: User[];
  total: number;
}

export async function listUsers(db: Executor, options: { q: string | undefined; includeInactive: boolean; limit: number; offset: number }): Promise<UserPage> {
  const where: string[] = [];
  const args: (string | number)[] = [];
  if (!options.includeInactive) where.push("active = 1");
  if (options.q) {
    where.push("email LIKE ? ESCAPE '\\'");
    args.push(likePattern(options.q));
  }
  const clause = where.length ? `WHERE ${where.join(" AND ")}` : "";
  const total = await one(db, `SELECT COUNT(*) AS n FROM users ${clause}`, args);
  const rows = await all(db, `SELECT * FROM users ${clause} ORDER BY created_at, id LIMIT +? OFFSET +?`, [...args, options.limit, options.offset]);
  return { users: rows.map(toUser), total: Number(total?.n ?? 0) };
}

export async function updateUser(db: Executor, id: string, change: { role?: Role; active?: boolean }, now: number): Promise<User | null> {
  const row = await one(
    db,
    `UPDATE users SET
       role = COALESCE(?, role),
       active = COALESCE(?, active),
       deactivated_at = CASE WHEN ? = 0 THEN ? WHEN ? = 1 THEN NULL ELSE deactivated_at END,
       updated_at = ?
     WHERE id = ? RETURNING *`,
    [
      change.role ?? null,
      change.active === undefined ? null : change.active ? 1 : 0,
      change.active === undefined ? null : change.active ? 1 : 0,
      now,
      change.active === undefined ? null : change.active ? 1 : 0,
      now,
      id,
    ],
  );
  return row ? toUser(row) : null;
}

/** Binds the OIDC identity at first login; later logins must present the same (issuer, subject). */
export async function bindOidcIdentity(db: Executor, id: string, issuer: string, subject: string, now: number): Promise<void> {
  await db.execute({
    sql: "UPDATE users SET oidc_issuer = ?, oidc_subject = ?, updated_at = ? WHERE id = ?",
    args: [issuer, subject, now, id],
  });
}

/**
 * The user object of the session result (SessionResult in lib/schemas/shared.ts): `id` as in every other
 * user object, and `user_id`, the same value, for clients written against the first release.
 */
export function toPublicUser(user: User): WireOf<typeof PublicUser> {
  return {
    id: user.id,
    user_id: user.id,
    email: user.email,
    oidc_subject: user.oidc_subject ?? "",
    role: user.role,
    avatar_url: user.avatar_url,
  };
}

/** The user resource of the user-management endpoints. */
export function toUserResource(user: User) {
  return {
    id: user.id,
    email: user.email,
    role: user.role,
    active: user.active,
    oidc_subject: user.oidc_subject,
    avatar_url: user.avatar_url,
    invited_by: user.invited_by,
    created_at: user.created_at,
    updated_at: user.updated_at,
    deactivated_at: user.deactivated_at,
  };
}
