// The page cursor of the keyset listings (docs/api.md "Builds"): a page continues after the
// last item it answered, named by the key it is ordered by, so items added meanwhile never shift a
// page and page 20,000 costs what page 1 does. The cursor is opaque to clients: base64url of a
// listing's tag and the key's positive integers (`b<build number>`; `d<received_at>.<rowid>`), so a
// cursor of one listing is refused by another and one the API did not give out is 400.
import { z } from "zod";

export function encodeCursor(tag: string, key: readonly number[]): string {
  return Buffer.from(`${tag}${key.join(".")}`).toString("base64url");
}

/** The key of `size` integers a cursor of listing `tag` names, or null when it is not one this API gave out. */
export function decodeCursor(tag: string, size: number, cursor: string): number[] | null {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(cursor)) return null;
  const text = Buffer.from(cursor, "base64url").toString("latin1");
  if (!text.startsWith(tag)) return null;
  const parts = text.slice(tag.length).split(".");
  if (parts.length !== size || !parts.every((p) => /^[1-9]\d{0,15}$/.test(p))) return null;
  const key = parts.map(Number);
  return key.every(Number.isSafeInteger) ? key : null;
}

/** The `cursor` query parameter of listing `tag`: its key once decoded, 400 invalid_request when it is not a cursor of that listing. */
export function cursorParam(tag: string, size: number, what: string) {
  return z
    .string()
    .transform((value, ctx) => {
      const key = decodeCursor(tag, size, value);
      if (key === null) {
        ctx.addIssue({ code: "custom", message: "is not a cursor from this listing (use next_cursor as given)" });
        return z.NEVER;
      }
      return key;
    })
    .optional()
    .describe(`next_cursor of the previous page; omit for the newest ${what}`);
}
