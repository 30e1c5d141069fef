// Encryption at rest for secrets Roost must be able to read back (OIDC client secret, GitHub App
// private key, GitLab access token, webhook secrets): AES-256-GCM with a key kept outside the
// database, so a copy of the database alone reveals none of them.
//
// The key is ROOST_SECRET_KEY (base64 of 32 bytes) when set, otherwise a 0600 file `secret.key`
// in the data dir, created at first start. Sealed values are "v1.<iv>.<ciphertext+tag>" in
// base64url; the associated data binds a value to its purpose, so a sealed client secret cannot
// be pasted into another column and decrypted there.
import { join } from "node:path";
import { link, readFile, unlink, writeFile } from "node:fs/promises";
import { decodeBase64, decodeBase64urlIgnorePadding, encodeBase64, encodeBase64urlNoPadding } from "@oslojs/encoding";

export const SECRET_KEY_FILE = "secret.key";

export class DecryptionError extends Error {}

export interface SecretBox {
  seal(plaintext: string, purpose: string): Promise<string>;
  /** Throws DecryptionError when the value was sealed with another key, for another purpose, or was altered. */
  open(sealed: string, purpose: string): Promise<string>;
}

function decodeKey(text: string): Uint8Array {
  const trimmed = text.trim();
  const bytes = /[-_]/.test(trimmed) ? decodeBase64urlIgnorePadding(trimmed.replace(/=+$/, "")) : decodeBase64(trimmed);
  if (bytes.byteLength !== 32) throw new Error("the secret key must be 32 bytes, base64-encoded");
  return bytes;
}

/** Loads the key from ROOST_SECRET_KEY or the data dir, creating the key file (0600) on first use. */
export async function loadSecretKey(dataDir: string, fromEnv: string | undefined): Promise<Uint8Array> {
  if (fromEnv) return decodeKey(fromEnv);
  const path = join(dataDir, SECRET_KEY_FILE);
  const existing = await readFile(path, "utf8").catch(() => null);
  if (existing !== null) return decodeKey(existing);
  const key = crypto.getRandomValues(new Uint8Array(32));
  // Written whole under a name of its own, then linked into place: link(2) fails if the name
  // exists, so a daemon starting beside this one sees no key file or the complete one, never the
  // empty file an exclusive create shows between its open and its write.
  const draft = `${path}.${process.pid}.${encodeBase64urlNoPadding(crypto.getRandomValues(new Uint8Array(6)))}`;
  await writeFile(draft, encodeBase64(key) + "\n", { mode: 0o600, flag: "wx" });
  try {
    await link(draft, path);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    // Another process created it first (two daemons starting together): use theirs.
    return decodeKey(await readFile(path, "utf8"));
  } finally {
    await unlink(draft).catch(() => {});
  }
}

/** How many opened values a box keeps: every integration's credentials, with room to spare. */
const OPENED_CACHE_LIMIT = 256;

export async function createSecretBox(rawKey: Uint8Array): Promise<SecretBox> {
  const key = await crypto.subtle.importKey("raw", new Uint8Array(rawKey), { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
  const encoder = new TextEncoder();
  // Every webhook delivery reads its integration's webhook secret: opening the same sealed value
  // again and again was a tenth of a delivery's time. A sealed value never changes meaning (a new
  // secret is a new sealed value), so what it opened to can be kept, in this box only.
  const opened = new Map<string, string>();
  return {
    async seal(plaintext, purpose) {
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: encoder.encode(purpose) }, key, encoder.encode(plaintext));
      return `v1.${encodeBase64urlNoPadding(iv)}.${encodeBase64urlNoPadding(new Uint8Array(sealed))}`;
    },
    async open(sealed, purpose) {
      const cacheKey = `${purpose}\n${sealed}`;
      const known = opened.get(cacheKey);
      if (known !== undefined) return known;
      const parts = sealed.split(".");
      if (parts.length !== 3 || parts[0] !== "v1") throw new DecryptionError("not a sealed value");
      let text: string;
      try {
        // Node's native base64url decoder: the sealed blob of a private key is a few kilobytes.
        const iv = Buffer.from(parts[1]!, "base64url");
        const data = Buffer.from(parts[2]!, "base64url");
        const plain = await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: new Uint8Array(iv), additionalData: encoder.encode(purpose) },
          key,
          new Uint8Array(data),
        );
        text = new TextDecoder().decode(plain);
      } catch {
        throw new DecryptionError("the value cannot be decrypted with this key");
      }
      if (opened.size >= OPENED_CACHE_LIMIT) opened.delete(opened.keys().next().value!);
      opened.set(cacheKey, text);
      return text;
    },
  };
}
