// API tokens (docs/api.md "API tokens"): shown once, stored hashed, revocable.
import type { Executor } from "../db/client.ts";
import { all, likePattern, num, numOrNull, one, run, str, type Row } from "../db/client.ts";
import type { Role } from "./roles.ts";
import { displayPrefix, mintSecret, parseSecret, secretMatches } from "./secrets.ts";
import { toUser, type User } from "./users.ts";
import { VerifiedReads } from "../db/verified-reads.ts";
import type { ApiToken, WireOf } from "../schemas/shared.ts";

/** The listed shape; never carries the hash. */
export type PublicApiToken = WireOf<typeof ApiToken>;

/** last_used_at is written at most once a minute per token, so a busy script does not turn every read into a write. */
export const LAST_USED_RESOLUTION_SECONDS = 60;

/**
 * One API token (table api_tokens), with its creator's e-mail joined in. Read property by property
 * rather than through rowMapper: every table's mapper calls the same column readers, which in a
 * daemon meet every row shape and read slowest, and the token list maps a page of these on every
 * request (about 8 % of its CPU with the public shape after it; docs/benchmarks.md "The authenticated read path").
 */
function toRow(row: Row): ApiTokenRow {
  return {
    id: String(row.id),
    name: String(row.name),
    role: String(row.role) as Role,
    created_by: String(row.created_by),
    created_by_email: row.created_by_email === null || row.created_by_email === undefined ? "" : String(row.created_by_email),
    created_at: Number(row.created_at),
    expires_at: Number(row.expires_at),
    last_used_at: row.last_used_at === null || row.last_used_at === undefined ? null : Number(row.last_used_at),
    revoked_at: row.revoked_at === null || row.revoked_at === undefined ? null : Number(row.revoked_at),
  };
}
export interface ApiTokenRow {
  id: string;
  name: string;
  role: Role;
  created_by: string;
  created_by_email: string;
  created_at: number;
  expires_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export function toPublicApiToken(token: ApiTokenRow, now: number): PublicApiToken {
  return {
    id: token.id,
    name: token.name,
    prefix: displayPrefix("pat", token.id),
    role: token.role,
    created_at: token.created_at,
    created_by: token.created_by,
    created_by_email: token.created_by_email,
    expires_at: token.expires_at,
    last_used_at: token.last_used_at,
    is_expired: token.expires_at <= now,
    is_revoked: token.revoked_at !== null,
  };
}

/** The listed columns only: not the secret's hash, which a page would read into a string per row for nothing. */
const SELECT = `SELECT t.id, t.name, t.role, t.created_by, t.created_at, t.expires_at, t.last_used_at, t.revoked_at, u.email AS created_by_email
  FROM api_tokens t JOIN users u ON u.id = t.created_by`;

export async function insertApiToken(
  db: Executor,
  fields: { name: string; role: Role; createdBy: string; createdByEmail: string; now: number; expiresAt: number },
): Promise<{ token: string; row: ApiTokenRow }> {
  const minted = mintSecret("pat");
  await db.execute({
    sql: `INSERT INTO api_tokens (id, name, secret_hash, role, created_by, created_at, expires_at)
          VALUES (?, ?, ?, ?, ?, ?, ?)`,
    args: [minted.id, fields.name, minted.hash, fields.role, fields.createdBy, fields.now, fields.expiresAt],
  });
  return {
    token: minted.token,
    row: {
      id: minted.id,
      name: fields.name,
      role: fields.role,
      created_by: fields.createdBy,
      created_by_email: fields.createdByEmail,
      created_at: fields.now,
      expires_at: fields.expiresAt,
      last_used_at: null,
      revoked_at: null,
    },
  };
}

export async function findApiToken(db: Executor, id: string): Promise<ApiTokenRow | null> {
  const row = await one(db, `${SELECT} WHERE t.id = +?`, [id]);
  return row ? toRow(row) : null;
}

/** A token with its creator as read by its id, and its secret's stored hash. */
interface TokenWithCreator {
  token: ApiTokenRow;
  creator: User;
  secretHash: string;
}

/** The tokens presented lately, as read by id, while the database has not changed (lib/db/verified-reads.ts). */
const presented = new VerifiedReads<TokenWithCreator>();

/**
 * The token a presented credential names, with its creator, if its secret matches (it may still be
 * expired or revoked, its creator inactive): one read by primary key, or the same row remembered
 * while the database's data version says nothing has been committed since (lib/db/verified-reads.ts),
 * so a revocation or a deactivation by any daemon answers the very next request. The secret is
 * compared with the stored hash on every request, in constant time.
 */
export async function findApiTokenBySecret(db: Executor, token: string): Promise<{ token: ApiTokenRow; creator: User } | null> {
  const parsed = parseSecret("pat", token);
  if (!parsed) return null;
  const found = await presented.get(db, parsed.id, () => readTokenWithCreator(db, parsed.id));
  if (!found || !secretMatches(parsed.secret, found.secretHash)) return null;
  return { token: found.token, creator: found.creator };
}

/**
 * The token a presented credential names, with its creator, as remembered (lib/db/verified-reads.ts), without asking the database whether anything has been
 * committed since, with what the caller confirms it by (VerifiedReads.remembered). Null when it is
 * not remembered so or its secret does not match (compared in constant time, as above).
 */
export function rememberedApiToken(db: Executor, token: string): { token: ApiTokenRow; creator: User; taken: { version: number; reads: number } } | null {
  const parsed = parseSecret("pat", token);
  const remembered = parsed && presented.remembered(db, parsed.id);
  if (!parsed || !remembered || !secretMatches(parsed.secret, remembered.value.secretHash)) return null;
  return { token: remembered.value.token, creator: remembered.value.creator, taken: { version: remembered.version, reads: remembered.reads } };
}

async function readTokenWithCreator(db: Executor, id: string): Promise<TokenWithCreator | null> {
  // `= +?`, not `= ?`: the same plan (both primary keys), but bun:sqlite runs this join with a
  // bare parameter about ten times slower (measured: docs/benchmarks.md, "Reads").
  const row = await one(
    db,
    `SELECT u.*, t.id AS token_id, t.name AS token_name, t.secret_hash AS token_secret_hash, t.role AS token_role, t.created_at AS token_created_at,
            t.expires_at AS token_expires_at, t.last_used_at AS token_last_used_at, t.revoked_at AS token_revoked_at
     FROM api_tokens t JOIN users u ON u.id = t.created_by WHERE t.id = +?`,
    [id],
  );
  if (!row) return null;
  // Frozen: the same objects answer every request until the database changes.
  const creator = Object.freeze(toUser(row));
  const apiToken: ApiTokenRow = Object.freeze({
    id: str(row, "token_id"),
    name: str(row, "token_name"),
    role: str(row, "token_role") as Role,
    created_by: creator.id,
    created_by_email: creator.email,
    created_at: num(row, "token_created_at"),
    expires_at: num(row, "token_expires_at"),
    last_used_at: numOrNull(row, "token_last_used_at"),
    revoked_at: numOrNull(row, "token_revoked_at"),
  });
  return { token: apiToken, creator, secretHash: str(row, "token_secret_hash") };
}

/**
 * The creator and role of an API token that still works (not revoked or expired, its creator
 * active), by the token's id: how a stream opened with the token asks again, in one read by
 * primary key.
 */
export async function findLiveApiTokenCreator(db: Executor, tokenId: string, now: number): Promise<{ creator: User; role: Role; expires_at: number } | null> {
  // `= +?` as in findApiTokenBySecret.
  const row = await one(
    db,
    "SELECT u.*, t.role AS token_role, t.expires_at AS token_expires_at FROM api_tokens t JOIN users u ON u.id = t.created_by WHERE t.id = +? AND t.revoked_at IS NULL AND t.expires_at > ? AND u.active = 1",
    [tokenId, now],
  );
  return row ? { creator: toUser(row), role: str(row, "token_role") as Role, expires_at: num(row, "token_expires_at") } : null;
}

export async function touchApiToken(db: Executor, id: string, now: number): Promise<void> {
  await run(db, "UPDATE api_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)", [
    now,
    id,
    now - LAST_USED_RESOLUTION_SECONDS,
  ]);
}

export async function revokeApiToken(db: Executor, id: string, now: number): Promise<void> {
  await run(db, "UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [now, id]);
}

export const TOKEN_SORT_FIELDS = ["created_at", "name", "expires_at", "last_used_at", "role"] as const;
export type TokenSortField = (typeof TOKEN_SORT_FIELDS)[number];

export interface TokenListOptions {
  createdBy: string | null;
  q: string | undefined;
  sort: TokenSortField;
  direction: "asc" | "desc";
  limit: number;
  offset: number;
}

export async function listApiTokens(db: Executor, options: TokenListOptions): Promise<{ rows: ApiTokenRow[]; total: number }> {
  const page = await readTokenPage(db, options);
  return { rows: page.rows.map(toRow), total: page.total };
}

/** A page of tokens in their listed shape (GET /v1/api-tokens), each read from its row straight into it. */
export async function listPublicApiTokens(db: Executor, options: TokenListOptions, now: number): Promise<{ tokens: PublicApiToken[]; total: number }> {
  const page = await readTokenPage(db, options);
  const tokens = new Array<PublicApiToken>(page.rows.length);
  for (let i = 0; i < tokens.length; i++) tokens[i] = publicOf(page.rows[i]!, now);
  return { tokens, total: page.total };
}

/** toPublicApiToken(toRow(row)) without the row between: a page maps up to a hundred of these on every request. */
function publicOf(row: Row, now: number): PublicApiToken {
  const id = String(row.id);
  const expiresAt = Number(row.expires_at);
  return {
    id,
    name: String(row.name),
    prefix: displayPrefix("pat", id),
    role: String(row.role) as Role,
    created_at: Number(row.created_at),
    created_by: String(row.created_by),
    created_by_email: row.created_by_email === null || row.created_by_email === undefined ? "" : String(row.created_by_email),
    expires_at: expiresAt,
    last_used_at: row.last_used_at === null || row.last_used_at === undefined ? null : Number(row.last_used_at),
    is_expired: expiresAt <= now,
    is_revoked: row.revoked_at !== null && row.revoked_at !== undefined,
  };
}

async function readTokenPage(db: Executor, options: TokenListOptions): Promise<{ rows: Row[]; total: number }> {
  const where: string[] = [];
  const args: (string | number)[] = [];
  if (options.createdBy !== null) {
    where.push("t.created_by = +?");
    args.push(options.createdBy);
  }
  if (options.q) {
    // `q` matches the name, the creator's e-mail or the listed prefix, case-insensitively.
    const pattern = likePattern(options.q);
    where.push("(lower(t.name) LIKE ? ESCAPE '\\' OR u.email LIKE ? ESCAPE '\\' OR lower('roost_pat_' || substr(t.id, 1, 8)) LIKE ? ESCAPE '\\')");
    args.push(pattern, pattern, pattern);
  }
  const clause = where.length ? `WHERE ${where.join(" AND ")}` : "";
  // The sort column comes from a fixed allow-list (TOKEN_SORT_FIELDS), never from the request text.
  const order = `t.${options.sort} ${options.direction === "asc" ? "ASC" : "DESC"} NULLS LAST, t.id ${options.direction === "asc" ? "ASC" : "DESC"}`;
  // `+?` keeps SQLite from compiling the statement again on every call (docs/benchmarks.md, "The request path").
  const rows = await all(db, `${SELECT} ${clause} ORDER BY ${order} LIMIT +? OFFSET +?`, [...args, options.limit, options.offset]);
  // A page that is not full ends the list, so it says the total; COUNT(*) only when there may be more.
  if (rows.length < options.limit && (rows.length > 0 || options.offset === 0)) return { rows, total: options.offset + rows.length };
  const total = await one(db, `SELECT COUNT(*) AS n FROM api_tokens t JOIN users u ON u.id = t.created_by ${clause}`, args);
  return { rows, total: Number(total?.n ?? 0) };
}
