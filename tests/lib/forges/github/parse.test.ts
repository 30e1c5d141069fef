// Reading GitHub deliveries (lib/forges/github/parse.ts): every published fixture in
// tests/fixtures/webhooks/github, with the verdict, the pinned commit and the reason, and the
// signature checked against GitHub's own library.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { decodeGithubBody, parseGithubDelivery, verifyGithubSignature } from "../../../../lib/forges/github/parse.ts";

const FIXTURES = resolve(import.meta.dir, "../../../fixtures/webhooks");
const load = (forge: string, file: string) => JSON.parse(readFileSync(join(FIXTURES, forge, file), "utf8"));

describe("GitHub fixtures", () => {
  test.each([
    ["ping.json", "ping", null, null, null, "ping: the hook is configured"],
    ["push__branch_created.json", "push", "push", "master", "6113728f27ae82c7b1a177c8d03f9e96e0adf246", null],
    ["push__branch_updated.json", "push", "push", "master", "199eddf46df50de8d02e99bf1c5fdb4101338224", null],
    ["push__branch_deleted.json", "push", null, null, null, "refs/heads/feature-branch was deleted"],
    ["push__tag_created.json", "push", "tag", null, "6113728f27ae82c7b1a177c8d03f9e96e0adf246", null],
    ["pull_request__opened.json", "pull_request", "pull_request", "master", "ec26c3e57ca3a959ca5aad62de7213c562f8c821", null],
    ["pull_request__synchronize.json", "pull_request", "pull_request", "master", "ec26c3e57ca3a959ca5aad62de7213c562f8c821", null],
    [
      "pull_request__labeled.json",
      "pull_request",
      null,
      "master",
      "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
      'pull request action "labeled" brings no new commit',
    ],
    [
      "pull_request__closed.json",
      "pull_request",
      null,
      "master",
      "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
      'pull request action "closed" brings no new commit',
    ],
  ])("%s (X-GitHub-Event %s) → %p on %p at %p", (file, eventName, kind, branch, sha, reason) => {
    const event = parseGithubDelivery(eventName, load("github", file));
    expect(event.kind).toBe(kind as never);
    if (kind !== null) {
      expect(event.branch).toBe(branch);
      expect(event.commitSha).toBe(sha);
    }
    expect(event.ignoredReason).toBe(reason);
    expect(event.identityConflict).toBeNull();
  });

  test("a tag push pins head_commit.id and names the tag", () => {
    const event = parseGithubDelivery("push", load("github", "push__tag_created.json"));
    expect(event).toMatchObject({ tag: "simple-tag", ref: "refs/tags/simple-tag", branch: null });
  });

  test("a pull request matches on its target branch and is grouped by its number", () => {
    const event = parseGithubDelivery("pull_request", load("github", "pull_request__opened.json"));
    expect(event).toMatchObject({
      branch: "master",
      prNumber: 2,
      ref: "refs/pull/2/head",
      actor: "Codertocat",
      repository: { externalId: "186853002", fullName: "Codertocat/Hello-World" },
    });
  });

  // No published fork pull request exists (tests/fixtures/webhooks/github/SOURCES.md): these change the fork fields of the opened fixture in memory.
  test("a pull request whose head is another repository is marked as from a fork (fields changed in the test)", () => {
    const payload = load("github", "pull_request__opened.json");
    payload.pull_request.head.repo.id = 999;
    expect(parseGithubDelivery("pull_request", payload)).toMatchObject({ kind: "pull_request", fromFork: true, ignoredReason: null });
    expect(parseGithubDelivery("pull_request", load("github", "pull_request__opened.json")).fromFork).toBeFalsy();
  });

  test("a pull request whose fork was deleted (head.repo null) is ignored: its code is gone (fields changed in the test)", () => {
    const payload = load("github", "pull_request__opened.json");
    payload.pull_request.head.repo = null;
    expect(parseGithubDelivery("pull_request", payload)).toMatchObject({ kind: null, ignoredReason: "pull request from a deleted fork" });
  });

  test("a base repository other than the delivery's repository is an identity conflict", () => {
    const payload = load("github", "pull_request__opened.json");
    payload.pull_request.base.repo.id = 5;
    payload.pull_request.head.repo.id = 5;
    expect(parseGithubDelivery("pull_request", payload).identityConflict).toBe("pull_request.base.repo.id 5 differs from repository.id 186853002");
  });

  test("form-encoded deliveries carry the JSON in `payload`", () => {
    const json = readFileSync(join(FIXTURES, "github", "push__branch_updated.json"), "utf8");
    const body = new TextEncoder().encode(`payload=${encodeURIComponent(json)}`);
    expect(decodeGithubBody(body, "application/x-www-form-urlencoded")).toEqual(JSON.parse(json));
  });
});

describe("GitHub signatures, checked against @octokit/webhooks-methods", () => {
  const secret = "It's a Secret to Everybody";
  test("GitHub's documented test vector", () => {
    expect(
      verifyGithubSignature(secret, new TextEncoder().encode("Hello, World!"), "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"),
    ).toBe(true);
  });

  test("every fixture as signed by octokit verifies; one changed byte, another secret, or a malformed header does not", async () => {
    for (const file of ["ping.json", "push__branch_updated.json", "pull_request__opened.json"]) {
      const text = readFileSync(join(FIXTURES, "github", file), "utf8");
      const signature = await sign(secret, text);
      const bytes = new TextEncoder().encode(text);
      expect(verifyGithubSignature(secret, bytes, signature)).toBe(true);
      expect(verifyGithubSignature(secret, new TextEncoder().encode(text + " "), signature)).toBe(false);
      expect(verifyGithubSignature("another secret", bytes, signature)).toBe(false);
      expect(verifyGithubSignature(secret, bytes, signature.toUpperCase())).toBe(false);
      expect(verifyGithubSignature(secret, bytes, signature.slice("sha256=".length))).toBe(false);
      expect(verifyGithubSignature(secret, bytes, null)).toBe(false);
    }
  });
});
