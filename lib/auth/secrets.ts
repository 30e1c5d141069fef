// Every bearer secret Roost issues (sessions, API tokens, setup tokens, recovery capabilities,
// and later runner and stream tokens) has one shape, after GitHub's and GitLab's token formats
// (https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/):
//
//   roost_<kind>_<id: 20 base62><secret: 32 base62><checksum: 6 base62>
//
// The id finds the row; only SHA-256(secret) is stored, and it is compared in constant time so
// that lookup time says nothing about how much of a guess was right (Lucia's sessions guide).
// 32 base62 characters carry 190 bits from the CSPRNG. The CRC32 checksum lets a scanner or a
// log redactor recognise a real token offline, and the typed prefix refuses type confusion.
import { timingSafeEqual } from "node:crypto";
import { sha256Bytes, sha256Hex } from "../crypto/hash.ts";

export type SecretKind = "sess" | "pat" | "setup" | "rcv" | "rt" | "st" | "whk";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const ID_LENGTH = 20;
const SECRET_LENGTH = 32;
const CHECKSUM_LENGTH = 6;

/** Uniform base62 from the CSPRNG: bytes >= 248 are rejected so every character is equally likely. */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    const bytes = crypto.getRandomValues(new Uint8Array(length * 2));
    for (const byte of bytes) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** An opaque, unguessable identifier (docs/api.md "Conventions"), about 119 bits. */
export function newId(): string {
  return randomBase62(ID_LENGTH);
}

function checksum(text: string): string {
  // Bun's CRC-32 (the IEEE polynomial of zlib and PNG) over the UTF-8 text: every credential
  // presented is checked, and the table-driven loop it replaced took about 4.7 µs a call, this 0.1.
  let n = Bun.hash.crc32(text);
  let out = "";
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** SHA-256 hex of a secret: the only form in which Roost stores one. */
export function hashSecret(secret: string): string {
  return sha256Hex(secret);
}

export interface MintedSecret {
  id: string;
  /** The whole credential, shown to its owner once. */
  token: string;
  /** SHA-256 of the secret part, the only thing stored. */
  hash: string;
}

export function mintSecret(kind: SecretKind, id: string = newId()): MintedSecret {
  const secret = randomBase62(SECRET_LENGTH);
  const body = `roost_${kind}_${id}${secret}`;
  return { id, token: body + checksum(body), hash: hashSecret(secret) };
}

const BASE62_ONLY = /^[0-9A-Za-z]+$/;

/** Splits a presented credential of the expected kind; null when it is not one (wrong kind, length or checksum). */
export function parseSecret(kind: SecretKind, token: string): { id: string; secret: string } | null {
  const prefix = `roost_${kind}_`;
  if (!token.startsWith(prefix) || token.length !== prefix.length + ID_LENGTH + SECRET_LENGTH + CHECKSUM_LENGTH) return null;
  const rest = token.slice(prefix.length);
  if (!BASE62_ONLY.test(rest)) return null;
  const body = token.slice(0, token.length - CHECKSUM_LENGTH);
  if (checksum(body) !== token.slice(-CHECKSUM_LENGTH)) return null;
  return { id: rest.slice(0, ID_LENGTH), secret: rest.slice(ID_LENGTH, ID_LENGTH + SECRET_LENGTH) };
}

/**
 * Constant-time check of a presented secret against a stored hash (prevents timing attacks): the
 * 32 bytes of its digest against the stored hex's, which is not secret; a stored value that is not
 * 64 hex digits decodes shorter and matches nothing.
 */
export function secretMatches(secret: string, storedHash: string): boolean {
  const presented = sha256Bytes(secret);
  const stored = Buffer.from(storedHash, "hex");
  return presented.length === stored.length && storedHash.length === 2 * stored.length && timingSafeEqual(presented, stored);
}

/** Constant-time equality of two arbitrary strings (shared secrets, webhook tokens): both are hashed first so lengths do not leak. */
export function constantTimeEqualStrings(a: string, b: string): boolean {
  return timingSafeEqual(sha256Bytes(a), sha256Bytes(b));
}

/** The part of a credential safe to show in listings and logs: kind prefix plus the first 8 id characters. */
export function displayPrefix(kind: SecretKind, id: string): string {
  return `roost_${kind}_${id.slice(0, 8)}`;
}

/** Matches any Roost credential; used to redact logs (and documented for secret scanners). */
export const ROOST_SECRET_PATTERN = /roost_(?:sess|pat|setup|rcv|rt|st|whk)_[0-9A-Za-z]{58}/g;

export function redactSecrets(text: string): string {
  return text.replace(ROOST_SECRET_PATTERN, (m) => `${m.slice(0, m.indexOf("_", 6) + 9)}…[redacted]`);
}
