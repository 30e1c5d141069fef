// GitHub deliveries: verify the signature over the raw bytes, then read the payload into a
// TriggerEvent (docs/webhooks.md; headers and payloads as documented at
// https://docs.github.com/en/webhooks/webhook-events-and-payloads).
import { hmacSha256Matches } from "../../crypto/hash.ts";
import { z } from "zod";
import { NumericId, PayloadCommit, changelogOf, checkPayload, clipped, ignored, type PushedPaths, type TriggerEvent } from "../event.ts";

/** X-Hub-Signature-256 = "sha256=" + hex HMAC-SHA256(secret, raw body); constant-time compare. */
export function verifyGithubSignature(secret: string, body: Uint8Array, header: string | null): boolean {
  return header !== null && header.startsWith("sha256=") && hmacSha256Matches(secret, body, header.slice("sha256=".length));
}

/** JSON deliveries, or form deliveries whose `payload` field holds the JSON. */
export function decodeGithubBody(text: string, contentType: string | null): unknown {
  if ((contentType ?? "").toLowerCase().startsWith("application/x-www-form-urlencoded")) {
    const payload = new URLSearchParams(text).get("payload");
    if (payload === null) throw new SyntaxError("form delivery without a payload field");
    return JSON.parse(payload);
  }
  return JSON.parse(text);
}

type Json = Record<string, any>;

// The fields Roost reads, typed as GitHub sends them (docs linked above); anything else passes.
const Repository = z.looseObject({ id: NumericId, full_name: z.string().optional() });
const Common = z.looseObject({
  action: z.string().optional(),
  repository: Repository.optional(),
  installation: z.looseObject({ id: NumericId }).optional(),
  sender: z.looseObject({ login: z.string().optional() }).nullish(),
});
export const Push = Common.extend({
  repository: Repository,
  ref: z.string(),
  after: z.string().optional(),
  deleted: z.boolean().optional(),
  pusher: z.looseObject({ name: z.string().optional() }).nullish(),
  // null when the push deletes a ref
  head_commit: PayloadCommit.nullish(),
  commits: z.array(PayloadCommit).optional(),
});
const PullRequestRepo = z.looseObject({ id: NumericId });
const PullRequest = Common.extend({
  repository: Repository,
  action: z.string(),
  number: z.number().int().optional(),
  pull_request: z.looseObject({
    number: z.number().int(),
    title: z.string().optional(),
    base: z.looseObject({ ref: z.string(), repo: PullRequestRepo }),
    // head.repo is null when the fork was deleted
    head: z.looseObject({ sha: z.string(), repo: PullRequestRepo.nullable() }),
  }),
});

/** The payload checked for the event (push and pull_request in full, others only where Roost reads them); throws InvalidPayload. */
export function checkGithubPayload(eventName: string, payload: unknown): Json {
  if (eventName === "push") return plainGithubPush(payload) ?? (checkPayload(Push, payload) as Json);
  return checkPayload(eventName === "pull_request" ? PullRequest : Common, payload) as Json;
}

/**
 * A push payload as Push checks it, when it plainly fits (what GitHub sends), checked field by
 * field without zod as plainClaim checks a runner's claim (zod was 3 % of a daemon's CPU under
 * webhook pushes, docs/benchmarks.md); null for anything else, which the schema then checks and
 * words the refusal of. The payload's own object: unknown fields pass, as with the schema.
 */
export function plainGithubPush(payload: unknown): Json | null {
  if (!isPlainObject(payload)) return null;
  const { repository, action, installation, sender, ref, after, deleted, pusher, head_commit, commits } = payload;
  if (!isPlainObject(repository) || !numericId(repository.id) || !optionalText(repository.full_name)) return null;
  if (!optionalText(action) || typeof ref !== "string" || !optionalText(after)) return null;
  if (installation !== undefined && !(isPlainObject(installation) && numericId(installation.id))) return null;
  if (sender !== undefined && sender !== null && !(isPlainObject(sender) && optionalText(sender.login))) return null;
  if (deleted !== undefined && typeof deleted !== "boolean") return null;
  if (pusher !== undefined && pusher !== null && !(isPlainObject(pusher) && optionalText(pusher.name))) return null;
  if (head_commit !== undefined && head_commit !== null && !plainCommit(head_commit)) return null;
  if (commits !== undefined && !(Array.isArray(commits) && commits.every(plainCommit))) return null;
  return payload;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function optionalText(value: unknown): boolean {
  return value === undefined || typeof value === "string";
}

/** NumericId: a safe integer, or 1–20 ASCII digits. */
function numericId(value: unknown): boolean {
  return Number.isSafeInteger(value) || (typeof value === "string" && /^\d{1,20}$/.test(value));
}

/** PayloadCommit. */
function plainCommit(commit: unknown): boolean {
  if (!isPlainObject(commit) || typeof commit.id !== "string" || !optionalText(commit.message)) return false;
  const author = commit.author;
  return author === undefined || author === null || (isPlainObject(author) && (author.name === null || optionalText(author.name)));
}

/** The App installation a delivery comes from (GitHub App deliveries carry `installation.id`), or null. */
export function githubInstallationId(payload: Json): string | null {
  const id = payload.installation?.id;
  return id === undefined || id === null ? null : String(id);
}

/**
 * GitHub lists at most 20 commits in some push payloads ("The array includes a maximum of 20
 * commits", https://docs.github.com/en/webhooks/webhook-events-and-payloads#push), so a list of 20
 * or more may be cut short.
 */
export const PUSH_COMMITS_LISTED = 20;

/**
 * The paths a branch push touched, when its payload proves the list complete: the branch existed
 * (`before` a commit, not 40 zeros; not `created`), the push was not forced (a forced push can drop
 * commits that no listed commit undoes), fewer than PUSH_COMMITS_LISTED commits are listed, the
 * last of them is the pushed head, and each lists its added, removed and modified paths (the
 * payload GitHub Actions hands a workflow has none). Null otherwise: the file is then read.
 */
export function pushedPathsOf(payload: Json): PushedPaths | null {
  const { before, after, commits } = payload;
  if (typeof payload.ref !== "string" || !payload.ref.startsWith("refs/heads/")) return null;
  if (payload.created === true || payload.forced !== false || payload.deleted === true) return null;
  if (typeof before !== "string" || !/^[0-9a-f]{40}$/.test(before) || /^0{40}$/.test(before)) return null;
  if (!Array.isArray(commits) || commits.length === 0 || commits.length >= PUSH_COMMITS_LISTED) return null;
  const head = payload.head_commit?.id;
  if (typeof head !== "string" || head !== after || commits[commits.length - 1]?.id !== head) return null;
  const paths = new Set<string>();
  for (const commit of commits) {
    for (const list of [commit.added, commit.removed, commit.modified]) {
      if (!Array.isArray(list) || !list.every((path) => typeof path === "string")) return null;
      for (const path of list) paths.add(path);
    }
  }
  return { before, paths };
}

const NEW_CODE_ACTIONS = new Set(["opened", "synchronize", "reopened"]);

/** Reads a delivery into one TriggerEvent; throws InvalidPayload when the payload is not what GitHub sends. */
export function parseGithubDelivery(eventName: string, body: unknown): TriggerEvent {
  const payload = checkGithubPayload(eventName, body);
  const repo = payload.repository ?? {};
  const base = {
    forge: "github" as const,
    event: eventName,
    action: typeof payload.action === "string" ? payload.action : "",
    repository: {
      externalId: repo.id === undefined || repo.id === null ? null : String(repo.id),
      fullName: typeof repo.full_name === "string" ? repo.full_name : null,
    },
    identityConflict: null as string | null,
    branch: null as string | null,
    tag: null as string | null,
    ref: "",
    commitSha: null as string | null,
    actor: payload.sender?.login ?? "",
    changelog: "",
    prNumber: null as number | null,
    message: "",
    fromFork: false,
  };

  if (eventName === "ping") return ignored(base, "ping: the hook is configured");

  if (eventName === "push") {
    const ref: string = payload.ref ?? "";
    base.ref = ref;
    base.actor = payload.pusher?.name ?? base.actor;
    if (payload.deleted === true || /^0{40}$/.test(payload.after ?? "")) return ignored(base, `${ref} was deleted`);
    const head = payload.head_commit;
    if (!head?.id) return ignored(base, `push to ${ref} names no head commit`);
    // head_commit.id, not `after`: for an annotated tag `after` is the tag object, not a commit.
    base.commitSha = head.id;
    base.message = head.message ?? "";
    base.changelog = changelogOf(Array.isArray(payload.commits) && payload.commits.length ? payload.commits : [head]);
    if (ref.startsWith("refs/heads/")) {
      const pushed = pushedPathsOf(payload);
      return { ...base, branch: ref.slice("refs/heads/".length), kind: "push", ignoredReason: null, ...(pushed ? { pushed } : {}) };
    }
    if (ref.startsWith("refs/tags/")) return { ...base, tag: ref.slice("refs/tags/".length), kind: "tag", ignoredReason: null };
    return ignored(base, `push to ${ref} is neither a branch nor a tag`);
  }

  if (eventName === "pull_request") {
    const pr = payload.pull_request ?? {};
    base.prNumber = typeof pr.number === "number" ? pr.number : (payload.number ?? null);
    base.ref = `refs/pull/${base.prNumber}/head`;
    base.branch = pr.base?.ref ?? null;
    base.commitSha = pr.head?.sha ?? null;
    base.message = pr.title ?? "";
    base.changelog = pr.title ? `#${base.prNumber} ${clipped(pr.title)}` : "";
    const baseRepoId = pr.base?.repo?.id;
    if (baseRepoId !== undefined && String(baseRepoId) !== base.repository.externalId) {
      base.identityConflict = `pull_request.base.repo.id ${baseRepoId} differs from repository.id ${base.repository.externalId}`;
    }
    if (!NEW_CODE_ACTIONS.has(base.action)) return ignored(base, `pull request action "${base.action}" brings no new commit`);
    // A deleted fork (head.repo null): its code can no longer be fetched. Another repository: a fork,
    // built only when the project opts in, with no secret and the target branch's pipeline file.
    if (!pr.head?.repo) return ignored(base, "pull request from a deleted fork");
    if (String(pr.head.repo.id) !== String(pr.base?.repo?.id)) base.fromFork = true;
    if (!base.commitSha) return ignored(base, "pull request names no head commit");
    return { ...base, kind: "pull_request", ignoredReason: null };
  }

  return ignored(base, `GitHub event "${eventName}" does not trigger builds`);
}
