// Roost's own push webhook for plain git remotes (lib/forges/git/parse.ts, docs/any-git.md "The
// push webhook"): the documented body, and a ref that moved, as one neutral event.
import { describe, expect, test } from "bun:test";
import { gitPushProjectId, parseGitPush, refKey } from "../../../../lib/forges/git/parse.ts";
import { InvalidPayload } from "../../../../lib/forges/event.ts";

const repository = { id: "int_1", fullName: "team/app" };
const sha = "a".repeat(40);

describe("the push webhook body", () => {
  test.each([
    ["refs/heads/main", sha, { kind: "push", branch: "main", tag: null, commitSha: sha, ignoredReason: null }],
    ["refs/tags/v1.0.0", sha, { kind: "tag", branch: null, tag: "v1.0.0", commitSha: sha, ignoredReason: null }],
    ["refs/heads/gone", "0".repeat(40), { kind: null, commitSha: null, ignoredReason: "refs/heads/gone was deleted" }],
  ])("%s at %s", (ref, after, expected) => {
    expect(parseGitPush({ project_id: "p1", ref, after, message: "fix [skip ci]" }, repository)).toMatchObject({
      forge: "git",
      event: "push",
      action: "webhook",
      repository: { externalId: "int_1", fullName: "team/app" },
      ref,
      message: "fix [skip ci]",
      ...expected,
    });
  });

  test("a body that is not the documented shape names each problem", () => {
    let error: unknown;
    try {
      parseGitPush({ project_id: "p1", ref: "main", after: "abc" }, repository);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidPayload);
    expect((error as InvalidPayload).issues.map((i) => i.path)).toEqual(["body.ref", "body.after"]);
  });

  test("the project an unverified body names, and the ref's identity shared with polling", () => {
    expect(gitPushProjectId({ project_id: "p1" })).toBe("p1");
    expect(gitPushProjectId({ project_id: "" })).toBeNull();
    expect(gitPushProjectId(null)).toBeNull();
    expect(refKey("r1", "refs/heads/main", sha)).toBe(`git:ref:r1:refs/heads/main:${sha}`);
  });
});
