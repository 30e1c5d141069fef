// Branch filter semantics (lib/branch-patterns.ts), like GitHub Actions' branch filters.
import { describe, expect, test } from "bun:test";
import { matchBranchPatterns } from "../../lib/branch-patterns.ts";

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
