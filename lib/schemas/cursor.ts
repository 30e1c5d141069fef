// The page cursor of the keyset listings (docs/api.md "Builds"): a page continues after the
// last item it answered, named by the key it is ordered by, so items added meanwhile never shift a
// page and page 20,000 costs what page 1 does. The cursor is opaque to clients: base64url of a
// listing's tag and the key's positive integers, the last of which may be a row's id (`b<build
// number>`; `p<received_at>.<delivery id>`), so a cursor of one listing is refused by another and
// one the API did not give out is 400.
import { z } from "zod";

export function encodeCursor(tag: string, key: readonly (number | string)[]): string {
  return Buffer.from(`${tag}${key.join(".")}`).toString("base64url");
}

/** A row id as a cursor may end with one (lib/auth/secrets.ts newId: 20 base62 characters; no ".", which separates the key's parts). */
const ID_PART = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The key of `size` integers a cursor of listing `tag` names, or null when it is not one this API
 * gave out. With `endsWithId`, the key's last part is a row's id (a string), the others integers.
 */
export function decodeCursor(tag: string, size: number, cursor: string, endsWithId = false): (number | string)[] | null {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(cursor)) return null;
  const text = Buffer.from(cursor, "base64url").toString("latin1");
  if (!text.startsWith(tag)) return null;
  const parts = text.slice(tag.length).split(".");
  if (parts.length !== size) return null;
  const numbers = endsWithId ? parts.slice(0, -1) : parts;
  if (!numbers.every((p) => /^[1-9]\d{0,15}$/.test(p))) return null;
  if (endsWithId && !ID_PART.test(parts.at(-1)!)) return null;
  const key = numbers.map(Number);
  if (!key.every(Number.isSafeInteger)) return null;
  return endsWithId ? [...key, parts.at(-1)!] : key;
}

/**
 * The `cursor` query parameter of listing `tag`: its key once decoded (`size` integers, or with
 * `endsWithId` integers then a row's id), 400 invalid_request when it is not a cursor of that listing.
 */
export function cursorParam(tag: string, size: number, what: string, endsWithId = false) {
  return z
    .string()
    .transform((value, ctx) => {
      const key = decodeCursor(tag, size, value, endsWithId);
      if (key === null) {
        ctx.addIssue({ code: "custom", message: "is not a cursor from this listing (use next_cursor as given)" });
        return z.NEVER;
      }
      return key;
    })
    .optional()
    .describe(`next_cursor of the previous page; omit for the newest ${what}`);
}
