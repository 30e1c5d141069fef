// Reading GitLab deliveries (lib/forges/gitlab/parse.ts): every published fixture in
// tests/fixtures/webhooks/gitlab, with the verdict, the pinned commit and the reason.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseGitlabDelivery } from "../../../../lib/forges/gitlab/parse.ts";

const FIXTURES = resolve(import.meta.dir, "../../../fixtures/webhooks");
const load = (forge: string, file: string) => JSON.parse(readFileSync(join(FIXTURES, forge, file), "utf8"));

describe("GitLab fixtures", () => {
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
