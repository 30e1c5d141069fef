// Reading Gitea and Forgejo deliveries (lib/forges/gitea/parse.ts): every fixture in
// tests/fixtures/webhooks/gitea, with the verdict, the pinned commit and the reason, and the
// signature over the raw body.
import { createHmac } from "node:crypto";
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { giteaHeaders, giteaRepositoryId, parseGiteaDelivery, verifyGiteaSignature } from "../../../../lib/forges/gitea/parse.ts";

const FIXTURES = resolve(import.meta.dir, "../../../fixtures/webhooks");
const text = (forge: string, file: string) => readFileSync(join(FIXTURES, forge, file), "utf8");
const load = (forge: string, file: string) => JSON.parse(text(forge, file));

describe("Gitea fixtures", () => {
  test("a tag push names the tag", () => {
    expect(parseGiteaDelivery("push", load("gitea", "push__tag_created.json"))).toMatchObject({ tag: "v1.0.0", branch: null });
  });

  test("a pull request whose head branch lives in another repository is from a fork", () => {
    expect(parseGiteaDelivery("pull_request", load("gitea", "pull_request__opened_from_fork.json"))).toMatchObject({
      kind: "pull_request",
      fromFork: true,
      prNumber: 7,
    });
    expect(parseGiteaDelivery("pull_request", load("gitea", "pull_request__opened.json")).fromFork).toBe(false);
  });

  test("the repository an unverified body claims is its repository.id", () => {
    expect(giteaRepositoryId(load("gitea", "push.json"))).toBe("140");
    expect(giteaRepositoryId({ repository: { id: "not a number" } })).toBeNull();
    expect(giteaRepositoryId(null)).toBeNull();
  });
});

describe("Gitea and Forgejo headers and signatures", () => {
  test("Forgejo's spellings are read first, Gitea's otherwise", () => {
    expect(giteaHeaders(new Headers({ "x-gitea-event": "push", "x-gitea-delivery": "d1", "x-gitea-signature": "ab" }))).toEqual({
      event: "push",
      deliveryId: "d1",
      credential: "ab",
    });
    expect(
      giteaHeaders(new Headers({ "x-forgejo-event": "pull_request", "x-gitea-event": "push", "x-forgejo-signature": "cd", "x-gitea-signature": "ab" })),
    ).toEqual({ event: "pull_request", deliveryId: "", credential: "cd" });
  });

  test("X-Gitea-Signature is the hex HMAC-SHA256 of the raw body; one changed byte or another secret does not verify", () => {
    const body = text("gitea", "push.json");
    const signature = createHmac("sha256", "a-secret-of-16-chars").update(body).digest("hex");
    const bytes = new TextEncoder().encode(body);
    expect(verifyGiteaSignature("a-secret-of-16-chars", bytes, signature)).toBe(true);
    expect(verifyGiteaSignature("a-secret-of-16-chars", new TextEncoder().encode(body + " "), signature)).toBe(false);
    expect(verifyGiteaSignature("another-secret-entirely", bytes, signature)).toBe(false);
    expect(verifyGiteaSignature("a-secret-of-16-chars", bytes, null)).toBe(false);
  });
});
