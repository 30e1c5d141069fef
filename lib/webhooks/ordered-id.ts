// Identifiers of the rows a webhook push writes (its delivery's and its builds'): the same 20
// base62 characters as newId (docs/api.md "Conventions"), opaque to clients, but led by the time
// they were made, so that one commit's new ids sit side by side in their primary key's index.
// With newId's 20 random characters each new delivery and build went to a random leaf of its
// table's id index: a page of each written to the WAL for nearly every push of a commit (and, on a
// large file, read from disk first). 13 random characters (77 bits from the CSPRNG) still leave an
// id unguessable; the time they show is the row's own created_at / received_at, which the API
// answers anyway.
import { randomBase62 } from "../auth/secrets.ts";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** Milliseconds in 7 base62 characters: 62^7 ms is about 111 years from 1970. */
const TIME_LENGTH = 7;

/**
 * A new id: the time in milliseconds (7 base62 characters, in the alphabet's ASCII order, so ids
 * sort as their times do under SQLite's BINARY collation), then 13 random base62 characters.
 */
export function timeOrderedId(ms = Date.now()): string {
  let time = "";
  for (let n = Math.floor(ms), i = 0; i < TIME_LENGTH; i++, n = Math.floor(n / 62)) time = BASE62[n % 62] + time;
  return time + randomBase62(20 - TIME_LENGTH);
}
