// Reading GitHub deliveries (lib/forges/github/parse.ts): every published fixture in
// tests/fixtures/webhooks/github, with the verdict, the pinned commit and the reason, and the
// signature checked against GitHub's own library.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { PUSH_COMMITS_LISTED, decodeGithubBody, parseGithubDelivery, pushedPathsOf, verifyGithubSignature } from "../../../../lib/forges/github/parse.ts";
import { unchangedSince } from "../../../../lib/pipelines/source.ts";

const FIXTURES = resolve(import.meta.dir, "../../../fixtures/webhooks");
const load = (forge: string, file: string) => JSON.parse(readFileSync(join(FIXTURES, forge, file), "utf8"));

describe("GitHub fixtures", () => {
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
    expect(decodeGithubBody(`payload=${encodeURIComponent(json)}`, "application/x-www-form-urlencoded")).toEqual(JSON.parse(json));
  });
});

// Which pushes show the pipeline file unchanged since the branch's previous head (docs/pipelines.md
// "Where it is read"): only those whose commit list is provably the whole of before..after.
describe("a push's touched paths (pushedPathsOf)", () => {
  const updated = () => load("github", "push__branch_updated.json");
  const BEFORE = "a10867b14bb761a232cd80139fbd4c0d33264240";
  const commit = (id: string, modified: string[]) => ({ id, message: "m", added: [], removed: [], modified });
  /** `n` commits ending at the fixture's head, each modifying README.md. */
  const listing = (n: number) => {
    const p = updated();
    p.commits = Array.from({ length: n }, (_, i) => commit(i === n - 1 ? p.after : i.toString(16).padStart(40, "b"), ["README.md"]));
    return p;
  };

  test("GitHub's published branch update qualifies: its previous head and the one path it modified", () => {
    expect(pushedPathsOf(updated())).toEqual({ before: BEFORE, paths: new Set(["README.md"]) });
    expect(parseGithubDelivery("push", updated()).pushed).toEqual({ before: BEFORE, paths: new Set(["README.md"]) });
  });

  test.each([
    ["a new branch (before is 40 zeros, created)", "push__branch_created.json", (p: any) => p],
    ["a deleted branch", "push__branch_deleted.json", (p: any) => p],
    ["a tag", "push__tag_created.json", (p: any) => p],
    ["a forced push (it can drop commits no listed one undoes)", "push__branch_updated.json", (p: any) => ({ ...p, forced: true })],
    ["no `forced` field", "push__branch_updated.json", ({ forced: _, ...p }: any) => p],
    ["created: true with a non-zero before", "push__branch_updated.json", (p: any) => ({ ...p, created: true })],
    ["before is not a commit id", "push__branch_updated.json", (p: any) => ({ ...p, before: "main" })],
    ["no commits listed", "push__branch_updated.json", (p: any) => ({ ...p, commits: [] })],
    ["the head is not the last commit listed", "push__branch_updated.json", (p: any) => ({ ...p, commits: [commit("c".repeat(40), ["README.md"])] })],
    [
      "a commit without its path lists (as GitHub Actions hands the payload)",
      "push__branch_updated.json",
      (p: any) => ({ ...p, commits: [{ id: p.after, message: "m" }] }),
    ],
    [
      "a path list holding something other than paths",
      "push__branch_updated.json",
      (p: any) => ({ ...p, commits: [{ ...commit(p.after, []), added: [null] }] }),
    ],
  ])("%s does not qualify", (_what, file, change) => {
    expect(pushedPathsOf(change(load("github", file)))).toBeNull();
    const event = parseGithubDelivery("push", change(load("github", file)));
    expect(event.pushed).toBeUndefined();
  });

  test(`${PUSH_COMMITS_LISTED - 1} commits qualify; ${PUSH_COMMITS_LISTED} may be a list cut short`, () => {
    expect(pushedPathsOf(listing(PUSH_COMMITS_LISTED - 1))?.paths).toEqual(new Set(["README.md"]));
    expect(pushedPathsOf(listing(PUSH_COMMITS_LISTED))).toBeNull();
  });

  test("every added, removed and modified path of every commit counts", () => {
    const p = updated();
    p.commits = [
      { id: "d".repeat(40), added: ["ci/roost.yaml"], removed: [], modified: [] },
      { id: p.after, added: [], removed: ["old.yaml"], modified: ["README.md"] },
    ];
    expect(pushedPathsOf(p)?.paths).toEqual(new Set(["ci/roost.yaml", "old.yaml", "README.md"]));
  });

  test.each([
    ["roost.yaml", ["README.md"], BEFORE],
    ["roost.yaml", ["README.md", "roost.yaml"], null],
    ["./roost.yaml", ["roost.yaml"], null],
    ["ci/roost.yaml", ["ci//roost.yaml"], null],
    ["ci/roost.yaml", ["roost.yaml"], BEFORE],
  ])("the file at %p, when the push touched %p, is known from %p", (path, touched, expected) => {
    expect(unchangedSince({ pushed: { before: BEFORE, paths: new Set(touched) } }, path)).toBe(expected);
  });

  test("a fork's pull request, which reads its target branch's head, never uses a push's paths", () => {
    expect(unchangedSince({ pushed: { before: BEFORE, paths: new Set() }, forkTargetBranch: "main" }, "roost.yaml")).toBeNull();
    expect(unchangedSince({}, "roost.yaml")).toBeNull();
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
