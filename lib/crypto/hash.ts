// SHA-256, the one digest Roost computes itself: stored secrets, browser bindings, webhook content
// keys, artifacts. Native either way (hashing runs on every authenticated request: about 2 µs
// against 30 µs in pure JavaScript); a whole value goes through Bun.SHA256.hash, which makes no
// hash object (https://bun.sh/docs/api/hashing#bun-sha256: 0.2-0.4 µs a secret here against 1.4
// µs for node:crypto's createHash), and the same digest of the same UTF-8 bytes.
import { createHash, timingSafeEqual } from "node:crypto";

/** Lower-case hex SHA-256 of a string (as UTF-8) or of bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return Bun.SHA256.hash(data, "hex");
}

/** The raw 32-byte SHA-256 of a string (as UTF-8) or of bytes. */
export function sha256Bytes(data: string | Uint8Array): Uint8Array {
  return Bun.SHA256.hash(data) as Uint8Array;
}

/** SHA-256 over data that arrives in chunks (an upload streamed to disk). */
export function sha256Stream(): { update(chunk: Uint8Array): void; hex(): string } {
  const hash = createHash("sha256");
  return { update: (chunk) => void hash.update(chunk), hex: () => hash.digest("hex") };
}

/**
 * Whether `hex` is the HMAC-SHA256 of `body` with `secret`, compared in constant time: the
 * signature every webhook host Roost receives from uses, in its own header format.
 */
export function hmacSha256Matches(secret: string, body: Uint8Array, hex: string): boolean {
  if (!/^[0-9a-f]{64}$/i.test(hex)) return false;
  // Bun's own HMAC (https://bun.sh/docs/api/hashing#bun-cryptohasher): 1.3 µs for a push's body
  // of about 900 bytes against 2.8 for node:crypto's createHmac, the same digest.
  const expected = new Bun.CryptoHasher("sha256", secret).update(body).digest();
  const given = Buffer.from(hex, "hex");
  return given.length === expected.length && timingSafeEqual(given, expected);
}
