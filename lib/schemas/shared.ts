// Wire schemas shared by several endpoints. Field names are snake_case on the wire, as in SQL.
import { z } from "zod";
import { RoleSchema } from "../auth/roles.ts";

/** The JSON a schema describes: what an encoder (`toPublic…`) returns and a handler answers. */
export type WireOf<S extends z.ZodType> = z.output<S>;

export const Timestamp = z.number().int().describe("Unix epoch seconds");

/** Page size: default 50, at most 200; offsets up to 2^31 (int64 on the wire, bounded here). */
export const PAGE_LIMIT_DEFAULT = 50;
export const PAGE_LIMIT_MAX = 200;
export const PAGE_OFFSET_MAX = 2_147_483_647;

const intParam = (min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d{1,19}$/, "must be an integer")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

export const Pagination = {
  limit: intParam(1, PAGE_LIMIT_MAX).default(PAGE_LIMIT_DEFAULT).describe(`page size, 1–${PAGE_LIMIT_MAX}, default ${PAGE_LIMIT_DEFAULT}`),
  offset: intParam(0, PAGE_OFFSET_MAX).default(0).describe("number of items to skip, default 0"),
};

/** A free-text search term: trimmed, at most 200 characters. */
export const SearchQuery = z.string().trim().max(200).optional().describe("case-insensitive substring search");

/** Names people type: trimmed, 1–100 characters, no control characters. */
export const DisplayName = z
  .string()
  .trim()
  .min(1, "must not be empty")
  .max(100, "must be at most 100 characters")
  .regex(/^[^\p{Cc}]*$/u, "must not contain control characters");

export const Email = z.string().trim().max(254).pipe(z.email("must be a valid e-mail address"));

export const PublicUser = z.object({
  id: z.string().describe("the user's id, as in every user object"),
  user_id: z.string().describe("the same value as id, kept for clients of the first release; read id"),
  email: z.string(),
  oidc_subject: z.string().describe("identity provider subject; empty until the first OIDC login"),
  role: RoleSchema.nullable(),
  avatar_url: z.string(),
});

/** The session result, returned by every login (docs/api.md "Authentication"). */
export const SessionResult = z.object({
  session_token: z.string().describe("roost_sess_…, valid 24 hours"),
  expires_at: Timestamp,
  user: PublicUser,
});

export const UserResource = z.object({
  id: z.string(),
  email: z.string(),
  role: RoleSchema,
  active: z.boolean(),
  oidc_subject: z.string().nullable(),
  avatar_url: z.string(),
  invited_by: z.string().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
  deactivated_at: Timestamp.nullable(),
});

export const ApiToken = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string().describe("leading part of the token, safe to show"),
  role: RoleSchema,
  created_at: Timestamp,
  created_by: z.string(),
  created_by_email: z.string(),
  expires_at: Timestamp,
  last_used_at: Timestamp.nullable().describe("updated at most once a minute"),
  is_expired: z.boolean(),
  is_revoked: z.boolean(),
});

export const ApiTokenCreated = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  role: RoleSchema,
  created_at: Timestamp,
  expires_at: Timestamp,
  token: z.string().describe("the plaintext token, returned only in this response"),
});

/** How deep a value nests: 0 for a scalar, 1 for a flat object or array. Iterative, so never a stack overflow. */
export function jsonDepth(value: unknown, stopAbove = Infinity): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== "object") continue;
    const here = depth + 1;
    if (here > deepest) deepest = here;
    if (deepest > stopAbove) return deepest;
    for (const child of Object.values(current)) stack.push([child, here]);
  }
  return deepest;
}

/**
 * A free-form JSON object (settings and the like) with bounds: at most `maxKeys` top-level keys,
 * nesting at most `maxDepth` levels (the object itself is level 1), at most `maxBytes` as JSON.
 * The depth is checked first and iteratively, so a value nested 50,000 deep is a 400, not a stack
 * overflow in JSON.stringify.
 */
export function boundedJsonObject(bounds: { maxDepth?: number; maxBytes?: number; maxKeys?: number } = {}) {
  const maxDepth = bounds.maxDepth ?? 16;
  const maxBytes = bounds.maxBytes ?? 16_384;
  const maxKeys = bounds.maxKeys ?? 64;
  return z
    .record(z.string().max(100), z.unknown())
    .superRefine((value, ctx) => {
      if (Object.keys(value).length > maxKeys) {
        ctx.addIssue({ code: "custom", message: `at most ${maxKeys} keys` });
        return;
      }
      if (jsonDepth(value, maxDepth) > maxDepth) {
        ctx.addIssue({ code: "custom", message: `must nest at most ${maxDepth} levels deep` });
        return;
      }
      if (Buffer.byteLength(JSON.stringify(value)) > maxBytes) {
        ctx.addIssue({ code: "custom", message: `must be at most ${maxBytes} bytes as JSON` });
      }
    })
    .describe(`free-form JSON object: at most ${maxKeys} keys, ${maxDepth} levels deep, ${maxBytes} bytes`);
}

export const IdParam = z.string().min(1).max(64);
