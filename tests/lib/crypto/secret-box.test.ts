// Secrets at rest (lib/crypto/secret-box.ts): AES-256-GCM bound to a purpose. Opened values are
// remembered per box, which must never let a value open under another purpose or another key.
import { describe, expect, test } from "bun:test";
import { DecryptionError, createSecretBox } from "../../../lib/crypto/secret-box.ts";

const key = (fill: number) => new Uint8Array(32).fill(fill);

describe("secret box", () => {
  test("a sealed value opens to its plaintext, again and again", async () => {
    const box = await createSecretBox(key(1));
    const sealed = await box.seal("webhook-secret", "integration");
    expect(sealed).not.toContain("webhook-secret");
    expect(await box.open(sealed, "integration")).toBe("webhook-secret");
    expect(await box.open(sealed, "integration")).toBe("webhook-secret");
  });

  test("once opened, it still does not open for another purpose, under another key, or altered", async () => {
    const box = await createSecretBox(key(1));
    const sealed = await box.seal("webhook-secret", "integration");
    await box.open(sealed, "integration");
    await expect(box.open(sealed, "oidc")).rejects.toBeInstanceOf(DecryptionError);
    await expect((await createSecretBox(key(2))).open(sealed, "integration")).rejects.toBeInstanceOf(DecryptionError);
    // One character of the ciphertext, well inside it (all six of its bits are data), becomes
    // another: the check must look at the character it replaces, or 1 seal in 64 is not altered.
    const at = sealed.length - 5;
    const altered = sealed.slice(0, at) + (sealed[at] === "A" ? "B" : "A") + sealed.slice(at + 1);
    expect(altered).not.toBe(sealed);
    await expect(box.open(altered, "integration")).rejects.toBeInstanceOf(DecryptionError);
  });
});
