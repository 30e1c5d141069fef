// RSA key pairs for the test stand-ins (GitHub App keys, an OpenID Provider's signing keys, Google
// service accounts), lent from a pool of this test process. A 2048-bit RSA key takes 100-400 ms of
// CPU to generate, and the in-process tests start a stand-in per file or per test: generating each
// afresh was a quarter of `npm run test:fast`. A key is lent to one holder at a time and comes back
// when its stand-in stops, so two stand-ins running side by side (two GitHub organisations, a
// provider's key and the stranger key it must not accept) still hold different keys, as before.
import { generateKeyPairSync, type KeyObject } from "node:crypto";

export interface TestRsaKey {
  publicKey: KeyObject;
  privateKey: KeyObject;
}

const idle: TestRsaKey[] = [];

/** A key pair no other running stand-in holds; give it back with `returnRsaKeys` when done. */
export function borrowRsaKey(): TestRsaKey {
  return idle.pop() ?? generateKeyPairSync("rsa", { modulusLength: 2048 });
}

/** Gives keys back for the next stand-in of this process. */
export function returnRsaKeys(...keys: TestRsaKey[]): void {
  for (const key of keys) if (!idle.includes(key)) idle.push(key);
}
