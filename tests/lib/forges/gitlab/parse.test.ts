// Reading GitLab deliveries (lib/forges/gitlab/parse.ts): every published fixture in
// tests/fixtures/webhooks/gitlab, with the verdict, the pinned commit and the reason.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseGitlabDelivery } from "../../../../lib/forges/gitlab/parse.ts";

const FIXTURES = resolve(import.meta.dir, "../../../fixtures/webhooks");
const load = (forge: string, file: string) => JSON.parse(readFileSync(join(FIXTURES, forge, file), "utf8"));

describe("GitLab fixtures", () => {
  test.each([
    ["push.json", "Push Hook", "push", "master", "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", null, null],
    ["push__branch_deleted.json", "Push Hook", null, null, null, "refs/heads/feature was deleted", null],
    ["tag_push.json", "Tag Push Hook", "tag", null, "82b3d5ae55f7080f1e6022629cdb57bfae7cccc7", null, null],
    [
      "merge_request__open.json",
      "Merge Request Hook",
      "pull_request",
      "master",
      "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
      null,
      "object_attributes.target_project_id 14 differs from project.id 1",
    ],
    ["merge_request__update_with_oldrev.json", "Merge Request Hook", "pull_request", "main", "c136499ec574e1034b24c5d306de9acda3005367", null, null],
    ["merge_request__update_without_oldrev.json", "Merge Request Hook", null, null, null, "merge request update without new commits (no oldrev)", null],
    ["merge_request__update_labels.json", "Merge Request Hook", null, null, null, "merge request update without new commits (no oldrev)", null],
    ["merge_request__merge.json", "Merge Request Hook", null, null, null, 'merge request action "merge" brings no new commit', null],
  ])("%s (%s) → %p on %p at %p", (file, header, kind, branch, sha, reason, conflict) => {
    const event = parseGitlabDelivery(header, load("gitlab", file));
    expect(event.kind).toBe(kind as never);
    if (kind !== null) {
      expect(event.branch).toBe(branch);
      expect(event.commitSha).toBe(sha);
    }
    expect(event.ignoredReason).toBe(reason);
    expect(event.identityConflict).toBe(conflict);
  });

  test("a tag push pins checkout_sha and names the tag", () => {
    expect(parseGitlabDelivery("Tag Push Hook", load("gitlab", "tag_push.json"))).toMatchObject({ tag: "v1.0.0", ref: "refs/tags/v1.0.0" });
  });

  test("a merge request from another project is marked as from a fork (fields changed in the test)", () => {
    const payload = load("gitlab", "merge_request__update_with_oldrev.json");
    payload.object_attributes.source_project_id = 1234;
    expect(parseGitlabDelivery("Merge Request Hook", payload)).toMatchObject({ kind: "pull_request", fromFork: true, ignoredReason: null });
  });

  test("the push changelog lists the delivered commits", () => {
    const event = parseGitlabDelivery("Push Hook", load("gitlab", "push.json"));
    expect(event.changelog.split("\n")).toHaveLength(2);
    expect(event.changelog).toContain("b6568db Update Catalan translation to e38cb41.");
  });
});
