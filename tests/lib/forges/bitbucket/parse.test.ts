// Reading Bitbucket Cloud deliveries (lib/forges/bitbucket/parse.ts): every fixture in
// tests/fixtures/webhooks/bitbucket, with the verdict, the pinned commit and the reason, and the
// signature over the raw body.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { bitbucketRepositoryId, parseBitbucketDelivery, verifyBitbucketSignature } from "../../../../lib/forges/bitbucket/parse.ts";

const FIXTURES = resolve(import.meta.dir, "../../../fixtures/webhooks");
const load = (forge: string, file: string) => JSON.parse(readFileSync(join(FIXTURES, forge, file), "utf8"));

describe("Bitbucket fixtures", () => {
  test("a pull request from another repository is from a fork", () => {
    expect(parseBitbucketDelivery("pullrequest:created", load("bitbucket", "pullrequest_created__from_fork.json"))).toMatchObject({
      kind: "pull_request",
      fromFork: true,
      prNumber: 2,
    });
  });

  test("an event that brings no commit is ignored with its name", () => {
    expect(parseBitbucketDelivery("repo:fork", load("bitbucket", "repo_push.json"))).toMatchObject({
      kind: null,
      ignoredReason: 'Bitbucket event "repo:fork" does not trigger builds',
    });
  });

  test("the repository an unverified body claims is its UUID in braces", () => {
    expect(bitbucketRepositoryId(load("bitbucket", "repo_push.json"))).toMatch(/^\{[0-9a-f-]{36}\}$/);
    expect(bitbucketRepositoryId({ repository: { uuid: "no-braces" } })).toBeNull();
  });

  // The same sha256=<hex> form as GitHub's X-Hub-Signature-256, so GitHub's own library signs the reference.
  test("X-Hub-Signature is sha256= and the hex HMAC-SHA256 of the raw body", async () => {
    const body = JSON.stringify(load("bitbucket", "repo_push.json"));
    const signature = await sign("a-secret-of-16-chars", body);
    const bytes = new TextEncoder().encode(body);
    expect(verifyBitbucketSignature("a-secret-of-16-chars", bytes, signature)).toBe(true);
    expect(verifyBitbucketSignature("a-secret-of-16-chars", bytes, signature.slice("sha256=".length))).toBe(false);
    expect(verifyBitbucketSignature("another-secret-entirely", bytes, signature)).toBe(false);
  });
});
