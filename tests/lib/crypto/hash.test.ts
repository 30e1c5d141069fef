// The one SHA-256 helper (lib/crypto/hash.ts) against the FIPS 180-2 test vectors, and the places
// that store digests agreeing with it.
import { describe, expect, test } from "bun:test";
import { sha256Bytes, sha256Hex, sha256Stream } from "../../../lib/crypto/hash.ts";
import { hashSecret, secretMatches } from "../../../lib/auth/secrets.ts";
import { contentKey } from "../../../lib/webhooks/limits.ts";

const ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
const EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

describe("sha256", () => {
  test("a string (UTF-8), bytes and chunks give the same digest", () => {
    expect(sha256Hex("abc")).toBe(ABC);
    expect(sha256Hex(new TextEncoder().encode("abc"))).toBe(ABC);
    expect(sha256Hex("")).toBe(EMPTY);
    expect(Buffer.from(sha256Bytes("abc")).toString("hex")).toBe(ABC);
    const stream = sha256Stream();
    for (const part of ["a", "b", "c"]) stream.update(new TextEncoder().encode(part));
    expect(stream.hex()).toBe(ABC);
    expect(sha256Hex("é")).toBe(sha256Hex(new Uint8Array([0xc3, 0xa9])));
  });

  test("stored secrets and webhook content keys are that digest", () => {
    expect(hashSecret("abc")).toBe(ABC);
    expect(secretMatches("abc", ABC)).toBe(true);
    expect(secretMatches("abd", ABC)).toBe(false);
    expect(contentKey("github", new TextEncoder().encode("abc"))).toBe(`github:content:${ABC}`);
  });
});
