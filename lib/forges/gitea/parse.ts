// Gitea and Forgejo deliveries (docs/webhooks.md "Gitea and Forgejo"): X-Gitea-Signature (Forgejo
// also sends X-Forgejo-Signature) is the hex HMAC-SHA256 of the raw body with the hook's secret;
// the payloads follow GitHub's shape (https://docs.gitea.com/usage/webhooks, Gitea's
// modules/structs/hook.go PushPayload and PullRequestPayload), with pull request branches naming
// their repository by repo_id.
import { hmacSha256Matches } from "../../crypto/hash.ts";
import { z } from "zod";
import { NumericId, InvalidPayload, PayloadCommit, changelogOf, checkPayload, clipped, ignored, type TriggerEvent } from "../event.ts";

/** The delivery headers, Gitea's or Forgejo's (a Forgejo instance sends both spellings). */
export function giteaHeaders(headers: Headers): { event: string; deliveryId: string; credential: string | null } {
  return {
    event: headers.get("x-forgejo-event") ?? headers.get("x-gitea-event") ?? "",
    deliveryId: (headers.get("x-forgejo-delivery") ?? headers.get("x-gitea-delivery") ?? "").slice(0, 100),
    credential: headers.get("x-forgejo-signature") ?? headers.get("x-gitea-signature"),
  };
}

/** Hex HMAC-SHA256(secret, raw body), compared in constant time. */
export function verifyGiteaSignature(secret: string, body: Uint8Array, signature: string | null): boolean {
  return signature !== null && hmacSha256Matches(secret, body, signature);
}

type Json = Record<string, any>;

const User = z.looseObject({ login: z.string().optional(), username: z.string().optional() }).nullish();
const Repository = z.looseObject({ id: NumericId, full_name: z.string().optional() });
const Common = z.looseObject({ action: z.string().optional(), repository: Repository.optional(), sender: User });
const Push = Common.extend({
  repository: Repository,
  ref: z.string(),
  after: z.string().optional(),
  commits: z.array(PayloadCommit).nullish(),
  head_commit: PayloadCommit.nullish(),
  pusher: User,
});
const Branch = z.looseObject({ ref: z.string(), sha: z.string().optional(), repo_id: NumericId });
const PullRequest = Common.extend({
  repository: Repository,
  action: z.string(),
  number: z.number().int().optional(),
  pull_request: z.looseObject({ number: z.number().int().optional(), title: z.string().optional(), base: Branch, head: Branch.extend({ sha: z.string() }) }),
});

/** The repository id an unverified payload names (to find whose secret to check), or null. */
export function giteaRepositoryId(payload: unknown): string | null {
  const id = (payload as Json | null)?.repository?.id;
  return typeof id === "number" || (typeof id === "string" && /^\d{1,20}$/.test(id)) ? String(id) : null;
}

const NEW_CODE_ACTIONS = new Set(["opened", "reopened", "synchronized"]);

/** Reads a delivery into one TriggerEvent; throws InvalidPayload when the payload is not what Gitea sends. */
export function parseGiteaDelivery(eventName: string, body: unknown): TriggerEvent {
  const payload = checkPayload(eventName === "push" ? Push : eventName === "pull_request" ? PullRequest : Common, body) as Json;
  const repo = payload.repository ?? {};
  const base = {
    forge: "gitea" as const,
    event: eventName,
    action: typeof payload.action === "string" ? payload.action : "",
    repository: { externalId: repo.id === undefined ? null : String(repo.id), fullName: typeof repo.full_name === "string" ? repo.full_name : null },
    identityConflict: null as string | null,
    branch: null as string | null,
    tag: null as string | null,
    ref: "",
    commitSha: null as string | null,
    actor: payload.sender?.login ?? payload.sender?.username ?? "",
    changelog: "",
    prNumber: null as number | null,
    message: "",
    fromFork: false,
  };

  if (eventName === "push") {
    const ref: string = payload.ref;
    base.ref = ref;
    base.actor = payload.pusher?.login ?? payload.pusher?.username ?? base.actor;
    if (/^0+$/.test(payload.after ?? "")) return ignored(base, `${ref} was deleted`);
    // head_commit.id where the body has it (for an annotated tag `after` is the tag object);
    // older Gitea and Forgejo versions send no head_commit, and then `after` names the commit.
    const commits: Json[] = Array.isArray(payload.commits) ? payload.commits : [];
    const after = /^[0-9a-f]{40,64}$/.test(payload.after ?? "") ? (payload.after as string) : null;
    const head: Json | null = payload.head_commit ?? (after ? (commits.find((c) => c.id === after) ?? { id: after }) : null);
    if (!head?.id) return ignored(base, `push to ${ref} names no head commit`);
    base.commitSha = head.id;
    base.message = head.message ?? "";
    base.changelog = changelogOf(commits.length ? commits : [head]);
    if (ref.startsWith("refs/heads/")) return { ...base, branch: ref.slice("refs/heads/".length), kind: "push", ignoredReason: null };
    if (ref.startsWith("refs/tags/")) return { ...base, tag: ref.slice("refs/tags/".length), kind: "tag", ignoredReason: null };
    return ignored(base, `push to ${ref} is neither a branch nor a tag`);
  }

  if (eventName === "pull_request") {
    const pr = payload.pull_request;
    // A minimal body may leave the number out of pull_request; the hosts send it at the top level too.
    const number: number | undefined = pr.number ?? payload.number;
    if (number === undefined)
      throw new InvalidPayload([{ path: "body.pull_request.number", message: "Invalid input: neither pull_request.number nor number is given" }]);
    base.prNumber = number;
    base.ref = `refs/pull/${number}/head`;
    base.branch = pr.base.ref;
    base.commitSha = pr.head.sha;
    base.message = pr.title ?? "";
    base.changelog = pr.title ? `#${number} ${clipped(pr.title)}` : "";
    if (String(pr.base.repo_id) !== base.repository.externalId)
      base.identityConflict = `pull_request.base.repo_id ${pr.base.repo_id} differs from repository.id ${base.repository.externalId}`;
    if (!NEW_CODE_ACTIONS.has(base.action)) return ignored(base, `pull request action "${base.action}" brings no new commit`);
    // From another repository: a fork, built only when the project opts in (lib/webhooks/accept.ts).
    if (String(pr.head.repo_id) !== String(pr.base.repo_id)) base.fromFork = true;
    return { ...base, kind: "pull_request", ignoredReason: null };
  }

  return ignored(base, `Gitea event "${eventName}" does not trigger builds`);
}
