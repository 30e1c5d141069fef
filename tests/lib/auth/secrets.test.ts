// Token format and comparison (lib/auth/secrets.ts).
import { describe, expect, test } from "bun:test";
import { constantTimeEqualStrings, hashSecret, mintSecret, parseSecret, randomBase62, redactSecrets, secretMatches } from "../../../lib/auth/secrets.ts";

describe("minted secrets", () => {
  test("have the typed prefix, a fixed length and parse back to their id", () => {
    const minted = mintSecret("pat");
    expect(minted.token).toMatch(/^roost_pat_[0-9A-Za-z]{58}$/);
    const parsed = parseSecret("pat", minted.token)!;
    expect(parsed.id).toBe(minted.id);
    expect(hashSecret(parsed.secret)).toBe(minted.hash);
  });

  test("are refused as another kind (type confusion)", () => {
    const minted = mintSecret("sess");
    expect(parseSecret("pat", minted.token)).toBeNull();
    expect(parseSecret("rcv", minted.token)).toBeNull();
  });

  test("fail the checksum when any character changes", () => {
    const { token } = mintSecret("pat");
    for (const i of [12, 30, token.length - 1]) {
      const c = token[i] === "a" ? "b" : "a";
      expect(parseSecret("pat", token.slice(0, i) + c + token.slice(i + 1))).toBeNull();
    }
  });

  test("keep parsing when they were minted before: the checksum is CRC-32 (IEEE) of the rest, in base62", () => {
    // Minted by the table-driven CRC-32 that Bun.hash.crc32 replaced (95d98a7); tokens already handed out must still parse.
    expect(parseSecret("pat", "roost_pat_0123456789abcdefghijuMmKFMTPXXfjTTKE0KXyL8pKO27J7BGe1gTMqP")).toEqual({
      id: "0123456789abcdefghij",
      secret: "uMmKFMTPXXfjTTKE0KXyL8pKO27J7BGe",
    });
    expect(parseSecret("sess", "roost_sess_0123456789abcdefghij7z7ChygzaMeeILg6F819aaqvDlwamFRw3rW26h")?.id).toBe("0123456789abcdefghij");
  });

  test("are unique and uniformly drawn from base62", () => {
    const seen = new Set(Array.from({ length: 2000 }, () => mintSecret("pat").token));
    expect(seen.size).toBe(2000);
    const counts = new Map<string, number>();
    for (const ch of randomBase62(62_000)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect(counts.size).toBe(62);
    for (const n of counts.values()) expect(n).toBeGreaterThan(700); // ~1000 each; a modulo bias would skew the first 8
  });
});

describe("comparison", () => {
  test("secretMatches is true only for the secret whose hash is stored", () => {
    const minted = mintSecret("st");
    const { secret } = parseSecret("st", minted.token)!;
    expect(secretMatches(secret, minted.hash)).toBe(true);
    // Change the last character to one it is not (a fixed "0" would equal it one time in 62).
    const other = secret.endsWith("0") ? "1" : "0";
    expect(secretMatches(secret.slice(0, -1) + other, minted.hash)).toBe(false);
    expect(secretMatches(secret, "short")).toBe(false);
    // A stored value that only starts as the right hex (the digest's hex and more, or a non-hex tail) matches nothing.
    expect(secretMatches(secret, minted.hash + "00")).toBe(false);
    expect(secretMatches(secret, minted.hash.slice(0, -2) + "zz")).toBe(false);
    expect(secretMatches(secret, "")).toBe(false);
  });

  test("constantTimeEqualStrings compares strings of any length", () => {
    expect(constantTimeEqualStrings("s3cret", "s3cret")).toBe(true);
    expect(constantTimeEqualStrings("s3cret", "s3cret!")).toBe(false);
    expect(constantTimeEqualStrings("", "")).toBe(true);
  });
});

describe("log redaction", () => {
  test("replaces every Roost credential in a text with its prefix", () => {
    const a = mintSecret("pat").token;
    const b = mintSecret("st").token;
    const out = redactSecrets(`GET /v1/builds/x/logs/stream?token=${b} auth=${a}`);
    expect(out).not.toContain(a);
    expect(out).not.toContain(b);
    expect(out).toContain("roost_pat_");
    expect(out).toContain("[redacted]");
  });
});
