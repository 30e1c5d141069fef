// Every recorded delivery of every host (tests/fixtures/webhooks/<host>), read by that host's parser
// into the one neutral event (lib/forges/event.ts): the verdict, the branch, the pinned commit, why
// a delivery is ignored, and any identity conflict. One table over the hosts; what only one host
// does is tested beside its parser (tests/lib/forges/<host>/parse.test.ts).
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { TriggerEvent } from "../../../lib/forges/event.ts";
import { parseBitbucketDelivery } from "../../../lib/forges/bitbucket/parse.ts";
import { parseGiteaDelivery } from "../../../lib/forges/gitea/parse.ts";
import { parseGithubDelivery } from "../../../lib/forges/github/parse.ts";
import { parseGitlabDelivery } from "../../../lib/forges/gitlab/parse.ts";

const FIXTURES = resolve(import.meta.dir, "../../fixtures/webhooks");

/** Each host's parser, called with the event header it names the delivery by (X-GitHub-Event, X-Gitlab-Event, X-Gitea-Event, X-Event-Key). */
const PARSERS = { github: parseGithubDelivery, gitlab: parseGitlabDelivery, gitea: parseGiteaDelivery, bitbucket: parseBitbucketDelivery };

/** file, event header, kind, branch, commit, ignored reason, and (GitLab) the identity conflict; null where none. */
type Row = [string, string, TriggerEvent["kind"], string | null, string | null, string | null, (string | null)?];

// What several fixtures of one host share: the head commit of its pull request, the reason an update without new commits is ignored.
const GITHUB_PR_HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
const GITLAB_MR_HEAD = "c136499ec574e1034b24c5d306de9acda3005367";
const GITEA_PR_HEAD = "d4c1a2b3e5f60718293a4b5c6d7e8f9012345678";
const NO_OLDREV = "merge request update without new commits (no oldrev)";

const ROWS: Record<keyof typeof PARSERS, Row[]> = {
  github: [
    ["ping.json", "ping", null, null, null, "ping: the hook is configured"],
    ["push__branch_created.json", "push", "push", "master", "6113728f27ae82c7b1a177c8d03f9e96e0adf246", null],
    ["push__branch_updated.json", "push", "push", "master", "199eddf46df50de8d02e99bf1c5fdb4101338224", null],
    ["push__branch_deleted.json", "push", null, null, null, "refs/heads/feature-branch was deleted"],
    ["push__tag_created.json", "push", "tag", null, "6113728f27ae82c7b1a177c8d03f9e96e0adf246", null],
    ["pull_request__opened.json", "pull_request", "pull_request", "master", GITHUB_PR_HEAD, null],
    ["pull_request__synchronize.json", "pull_request", "pull_request", "master", GITHUB_PR_HEAD, null],
    ["pull_request__labeled.json", "pull_request", null, "master", GITHUB_PR_HEAD, 'pull request action "labeled" brings no new commit'],
    ["pull_request__closed.json", "pull_request", null, "master", GITHUB_PR_HEAD, 'pull request action "closed" brings no new commit'],
  ],
  gitlab: [
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
    ["merge_request__update_with_oldrev.json", "Merge Request Hook", "pull_request", "main", GITLAB_MR_HEAD, null, null],
    ["merge_request__update_without_oldrev.json", "Merge Request Hook", null, "main", GITLAB_MR_HEAD, NO_OLDREV, null],
    ["merge_request__update_labels.json", "Merge Request Hook", null, "main", "2f7670508b771e7e77839402be8b34b13787aba8", NO_OLDREV, null],
    [
      "merge_request__merge.json",
      "Merge Request Hook",
      null,
      "main",
      "3e4db3586b65dd401de8c77b3ac343fd24cbf89b",
      'merge request action "merge" brings no new commit',
      null,
    ],
  ],
  gitea: [
    ["push.json", "push", "push", "develop", "bffeb74224043ba2feb48d137756c8a9331c449a", null],
    ["push__without_head_commit.json", "push", "push", "develop", "bffeb74224043ba2feb48d137756c8a9331c449a", null],
    ["push__tag_created.json", "push", "tag", null, "bffeb74224043ba2feb48d137756c8a9331c449a", null],
    ["push__branch_deleted.json", "push", null, null, null, "refs/heads/feature/old was deleted"],
    ["pull_request__opened.json", "pull_request", "pull_request", "master", GITEA_PR_HEAD, null],
    ["pull_request__opened_without_pr_number.json", "pull_request", "pull_request", "master", GITEA_PR_HEAD, null],
    ["pull_request__synchronized.json", "pull_request", "pull_request", "master", "e5d2b3c4f6071829304a5b6c7d8e9f0123456789", null],
    ["pull_request__closed.json", "pull_request", null, "master", GITEA_PR_HEAD, 'pull request action "closed" brings no new commit'],
  ],
  bitbucket: [
    ["repo_push.json", "repo:push", "push", "name-of-branch", "709d658dc5b6d6afcd46049c2f332ee3f515a67d", null],
    ["repo_push__tag_created.json", "repo:push", "tag", null, "709d658dc5b6d6afcd46049c2f332ee3f515a67d", null],
    ["repo_push__branch_deleted.json", "repo:push", null, null, null, "refs/heads/feature/old was deleted"],
    ["pullrequest_created.json", "pullrequest:created", "pull_request", "master", "d3022fc0ca3d", null],
    ["pullrequest_updated.json", "pullrequest:updated", "pull_request", "master", "a8c3e1f0b7d2", null],
  ],
};

const cases = Object.entries(ROWS).flatMap(([forge, rows]) => rows.map((row) => [forge as keyof typeof PARSERS, ...row] as const));

test.each(cases)("%s %s (%s) → %p on %p at %p", (forge, file, eventName, kind, branch, sha, reason, conflict = null) => {
  const event = PARSERS[forge](eventName, JSON.parse(readFileSync(join(FIXTURES, forge, file), "utf8")));
  expect(event).toMatchObject({ forge, kind, branch, commitSha: sha, ignoredReason: reason, identityConflict: conflict });
});
