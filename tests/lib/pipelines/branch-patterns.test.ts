// Branch filter semantics (lib/pipelines/branch-patterns.ts), like GitHub Actions' branch filters, and a
// variable's protected_refs, where a plain pattern names branches and refs/tags/… names tags.
import { describe, expect, test } from "bun:test";
import { matchBranchPatterns, matchRefPatterns, refPatternProblem, type BuildRef } from "../../../lib/pipelines/branch-patterns.ts";

describe("matchBranchPatterns", () => {
  test.each([
    [["main"], "main", true],
    [["main"], "main2", false],
    [["main"], "feature/main", false],
    [["release/*"], "release/1.0", true],
    [["release/*"], "release/1.0/hotfix", false],
    [["release/**"], "release/1.0/hotfix", true],
    [["release/**"], "release", false],
    [["**"], "anything/at/all", true],
    [["*"], "feature/x", false],
    [["*"], "feature", true],
    [["v?"], "v1", true],
    [["v?"], "v10", false],
    [["v?"], "v/", false],
    [["feature/**/ci"], "feature/ci", true],
    [["feature/**/ci"], "feature/a/b/ci", true],
    [["*.x"], "1.x", true],
    [["*.x"], "1x", false],
    [["release/**", "!release/**-alpha"], "release/1.0-alpha", false],
    [["release/**", "!release/**-alpha"], "release/1.0", true],
    [["release/**", "!release/**-alpha", "release/2.0-alpha"], "release/2.0-alpha", true],
    [["!main"], "main", false],
    [["!main"], "dev", false],
    [[], "main", false],
    [["feat+fix"], "feat+fix", true],
    [["(x)"], "(x)", true],
    [["v[0-9]*"], "v1.2.3", true],
    [["v[0-9]*"], "vnext", false],
    [["{main,develop}"], "develop", true],
  ])("%p on %p → %p", (patterns, branch, expected) => {
    expect(matchBranchPatterns(patterns, branch).matched).toBe(expected);
  });

  test("reasons explain the decision for the delivery log", () => {
    expect(matchBranchPatterns(["main", "release/*"], "feature/x").reason).toBe("branch feature/x not in [main, release/*]");
    expect(matchBranchPatterns(["main"], "main").reason).toBe("branch main matches main in [main]");
    expect(matchBranchPatterns(["**", "!wip/**"], "wip/a").reason).toBe("branch wip/a is excluded by !wip/** in [**, !wip/**]");
  });
});

describe("matchRefPatterns (protected_refs)", () => {
  const branch = (name: string): BuildRef => ({ kind: "branch", name });
  const tag = (name: string): BuildRef => ({ kind: "tag", name });
  test.each([
    // A plain name protects the branch only: a tag someone names master is not master.
    [["master"], branch("master"), true],
    [["master"], tag("master"), false],
    [["v*"], tag("v1.0"), false],
    [["release/*"], tag("release/1.0"), false],
    // Tags are named as tags.
    [["refs/tags/v*"], tag("v1.0"), true],
    [["refs/tags/v*"], branch("v1.0"), false],
    [["refs/tags/v*"], tag("release-1"), false],
    [["refs/tags/release/**"], tag("release/2024/1"), true],
    [["refs/tags/master"], tag("master"), true],
    [["refs/tags/master"], branch("master"), false],
    // refs/heads/ names branches the same way.
    [["refs/heads/main"], branch("main"), true],
    [["refs/heads/main"], tag("main"), false],
    [["refs/heads/release/*"], branch("release/1.0"), true],
    // Both kinds in one list; negation keeps to its own kind.
    [["main", "refs/tags/v*"], branch("main"), true],
    [["main", "refs/tags/v*"], tag("v2"), true],
    [["main", "refs/tags/v*"], tag("main"), false],
    [["refs/tags/v*", "!refs/tags/v*-rc*"], tag("v2.0-rc1"), false],
    [["refs/tags/v*", "!refs/tags/v*-rc*"], tag("v2.0"), true],
    [["**", "!refs/tags/**"], branch("feature/x"), true],
    [["**"], tag("v1"), false],
    [[], branch("main"), false],
  ])("%p on %p → %p", (patterns, ref, expected) => {
    expect(matchRefPatterns(patterns, ref).matched).toBe(expected);
  });

  test("the reason names the ref's kind and the pattern as written", () => {
    expect(matchRefPatterns(["main", "refs/tags/v*"], tag("v1.2")).reason).toBe("tag v1.2 matches refs/tags/v* in [main, refs/tags/v*]");
    expect(matchRefPatterns(["master"], tag("master")).reason).toBe("tag master not in [master]");
  });

  test.each([
    ["refs/tags/", "names no tag after refs/tags/"],
    ["!refs/heads/", "names no branch after refs/heads/"],
    ["refs/pull/*", "a full ref name starts with refs/heads/ (branches) or refs/tags/ (tags); a plain pattern names branches"],
    ["refs/tags/v*", null],
    ["main", null],
  ])("pattern %p: %p", (pattern, problem) => {
    expect(refPatternProblem(pattern)).toBe(problem);
  });
});
