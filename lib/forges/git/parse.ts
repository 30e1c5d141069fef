// Plain git remotes (docs/any-git.md): a ref that moved, seen by a poll or told by the generic push
// webhook (POST /v1/webhooks/git), as one TriggerEvent. The webhook body is Roost's own:
// {project_id, ref, before, after, message?, actor?}, signed like GitHub's deliveries
// (X-Roost-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>), so a post-receive hook can
// send it with openssl and curl.
import { z } from "zod";
import { changelogLine, checkPayload, ignored, type TriggerEvent } from "../event.ts";

const Sha = z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/, "must be a full commit id (40 or 64 hex digits)");

export const GitPushBody = z.looseObject({
  project_id: z.string().min(1).max(100).describe("the project that builds the repository (its webhook secret signs the body)"),
  ref: z.string().regex(/^refs\/(heads|tags)\/\S+$/, "must be refs/heads/<branch> or refs/tags/<tag>"),
  before: Sha.or(z.literal("")).optional(),
  after: Sha.describe("the new commit; all zeros when the ref was deleted"),
  message: z.string().max(10_000).optional().describe("the head commit's message ([skip ci] is honoured)"),
  actor: z.string().max(200).optional(),
});

/** The project an unverified body names (whose secret is then checked), or null. */
export function gitPushProjectId(payload: unknown): string | null {
  const id = (payload as { project_id?: unknown } | null)?.project_id;
  return typeof id === "string" && id.length > 0 && id.length <= 100 ? id : null;
}

/** The delivery identity of "this ref now points at this commit" in a repository, shared by the push webhook and polling. */
export function refKey(repositoryId: string, ref: string, sha: string): string {
  return `git:ref:${repositoryId}:${ref}:${sha}`;
}

/** A ref of the repository moved from `before` to `after`. */
export function refMoved(input: {
  repository: { id: string; fullName: string };
  event: string;
  action: string;
  ref: string;
  after: string;
  actor: string;
  message: string;
}): TriggerEvent {
  const base = {
    forge: "git" as const,
    event: input.event,
    action: input.action,
    repository: { externalId: input.repository.id, fullName: input.repository.fullName },
    identityConflict: null,
    branch: null as string | null,
    tag: null as string | null,
    ref: input.ref,
    commitSha: input.after,
    actor: input.actor,
    changelog: input.message ? changelogLine(input.after, input.message) : "",
    prNumber: null,
    message: input.message,
  };
  if (/^0+$/.test(input.after)) return ignored({ ...base, commitSha: null }, `${input.ref} was deleted`);
  if (input.ref.startsWith("refs/heads/")) return { ...base, branch: input.ref.slice("refs/heads/".length), kind: "push", ignoredReason: null };
  if (input.ref.startsWith("refs/tags/")) return { ...base, tag: input.ref.slice("refs/tags/".length), kind: "tag", ignoredReason: null };
  return ignored(base, `${input.ref} is neither a branch nor a tag`);
}

/** Reads a webhook body; throws InvalidPayload when it is not the documented shape. */
export function parseGitPush(body: unknown, repository: { id: string; fullName: string }): TriggerEvent {
  const payload = checkPayload(GitPushBody, body);
  return refMoved({
    repository,
    event: "push",
    action: "webhook",
    ref: payload.ref,
    after: payload.after,
    actor: payload.actor ?? "",
    message: payload.message ?? "",
  });
}
