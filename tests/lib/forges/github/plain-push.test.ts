// plainGithubPush (lib/forges/github/parse.ts) takes a push payload without zod when it plainly
// fits the Push schema, as plainClaim takes a runner's claim: what it answers must be what the
// schema makes of the same payload, and whatever the schema refuses it must leave to the schema
// (null), so that the 400's wording is the schema's.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Push, checkGithubPayload, plainGithubPush } from "../../../../lib/forges/github/parse.ts";
import { InvalidPayload } from "../../../../lib/forges/event.ts";

const FIXTURES = resolve(import.meta.dir, "../../../fixtures/webhooks/github");
const recorded = ["push__branch_created.json", "push__branch_deleted.json", "push__branch_updated.json", "push__tag_created.json"].map(
  (file) => JSON.parse(readFileSync(resolve(FIXTURES, file), "utf8")) as Record<string, unknown>,
);
const updated = recorded[2]!;
const commit = { id: "a".repeat(40), message: "fix", author: { name: "Ann", email: "ann@example.com" }, added: [], removed: [], modified: ["lib/main.dart"] };

const fits: unknown[] = [
  ...recorded,
  { ref: "refs/heads/main", repository: { id: 1 } },
  { ref: "refs/heads/main", repository: { id: "12345678901234567890", full_name: "acme/app" }, installation: { id: "7" }, sender: null, pusher: null },
  { ref: "refs/heads/main", repository: { id: 1 }, head_commit: null, commits: [], deleted: true, after: "0".repeat(40), action: "x" },
  {
    ref: "refs/heads/main",
    repository: { id: 1 },
    head_commit: commit,
    commits: [commit, { id: "b" }, { id: "c", author: null }, { id: "d", author: { name: null } }],
  },
  { ...updated, sender: { login: "octocat", id: 1 }, pusher: { name: "octocat", email: null }, installation: { id: 42, node_id: "x" } },
];

const refused: unknown[] = [
  null,
  [],
  "push",
  {},
  { ref: "refs/heads/main" },
  { ref: 1, repository: { id: 1 } },
  { ref: "refs/heads/main", repository: null },
  { ref: "refs/heads/main", repository: [] },
  { ref: "refs/heads/main", repository: { id: 1.5 } },
  { ref: "refs/heads/main", repository: { id: "1a" } },
  { ref: "refs/heads/main", repository: { id: "123456789012345678901" } },
  { ref: "refs/heads/main", repository: { id: null } },
  { ref: "refs/heads/main", repository: { id: 1, full_name: null } },
  { ref: "refs/heads/main", repository: { id: 1 }, action: 1 },
  { ref: "refs/heads/main", repository: { id: 1 }, after: null },
  { ref: "refs/heads/main", repository: { id: 1 }, deleted: "false" },
  { ref: "refs/heads/main", repository: { id: 1 }, installation: null },
  { ref: "refs/heads/main", repository: { id: 1 }, installation: { id: "x" } },
  { ref: "refs/heads/main", repository: { id: 1 }, sender: { login: 1 } },
  { ref: "refs/heads/main", repository: { id: 1 }, sender: "octocat" },
  { ref: "refs/heads/main", repository: { id: 1 }, pusher: { name: null } },
  { ref: "refs/heads/main", repository: { id: 1 }, head_commit: { message: "no id" } },
  { ref: "refs/heads/main", repository: { id: 1 }, head_commit: { ...commit, message: null } },
  { ref: "refs/heads/main", repository: { id: 1 }, head_commit: { ...commit, author: { name: 1 } } },
  { ref: "refs/heads/main", repository: { id: 1 }, head_commit: [commit] },
  { ref: "refs/heads/main", repository: { id: 1 }, commits: null },
  { ref: "refs/heads/main", repository: { id: 1 }, commits: commit },
  { ref: "refs/heads/main", repository: { id: 1 }, commits: [commit, null] },
  { ref: "refs/heads/main", repository: { id: 1 }, commits: [commit, { ...commit, id: 7 }] },
  { ...updated, repository: { ...(updated.repository as object), id: -0.5 } },
];

test("a push payload that fits is taken as the schema takes it", () => {
  for (const body of fits) {
    const taken = plainGithubPush(structuredClone(body));
    expect(taken).not.toBeNull();
    expect(taken).toEqual(Push.parse(structuredClone(body)) as never);
  }
});

test("whatever the schema refuses of a push payload is left to the schema, which words the refusal", () => {
  for (const body of refused) {
    const zod = Push.safeParse(structuredClone(body));
    expect(zod.success).toBe(false);
    const given = structuredClone(body);
    expect(plainGithubPush(given)).toBeNull();
    expect(given).toEqual(structuredClone(body));
    expect(() => checkGithubPayload("push", structuredClone(body))).toThrow(InvalidPayload);
  }
});
