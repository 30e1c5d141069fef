// Bitbucket Cloud deliveries (docs/webhooks.md "Bitbucket Cloud"): X-Event-Key names the event,
// X-Request-UUID the delivery, and X-Hub-Signature is "sha256=" and the hex HMAC-SHA256 of the raw
// body with the webhook's secret (https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/
// "Secure webhooks"). The payloads are those of the "Event payloads" page
// (https://support.atlassian.com/bitbucket-cloud/docs/event-payloads/): repositories are named by
// their UUID, pushes list one entry per changed ref in push.changes with its `new` state.
import { hmacSha256Matches } from "../../crypto/hash.ts";
import { z } from "zod";
import { changelogOf, checkPayload, clipped, ignored, type TriggerEvent } from "../event.ts";

export function bitbucketHeaders(headers: Headers): { event: string; deliveryId: string; credential: string | null } {
  return {
    event: headers.get("x-event-key") ?? "",
    deliveryId: (headers.get("x-request-uuid") ?? "").slice(0, 100),
    credential: headers.get("x-hub-signature"),
  };
}

/** `sha256=` + hex HMAC-SHA256(secret, raw body), compared in constant time. */
export function verifyBitbucketSignature(secret: string, body: Uint8Array, signature: string | null): boolean {
  return signature !== null && /^sha256=/i.test(signature) && hmacSha256Matches(secret, body, signature.slice("sha256=".length));
}

type Json = Record<string, any>;

const Uuid = z.string().regex(/^\{[0-9a-f-]{36}\}$/i, "must be a Bitbucket UUID in braces");
const Account = z.looseObject({ display_name: z.string().optional(), nickname: z.string().optional() }).nullish();
const Repository = z.looseObject({ uuid: Uuid, full_name: z.string().optional() });
const Commit = z.looseObject({
  hash: z.string().regex(/^[0-9a-f]{7,40}$/i),
  message: z.string().optional(),
  author: z.looseObject({ raw: z.string().optional() }).nullish(),
});
const RefState = z.looseObject({ type: z.string(), name: z.string(), target: Commit }).nullable();
const Push = z.looseObject({
  actor: Account,
  repository: Repository,
  push: z.looseObject({ changes: z.array(z.looseObject({ new: RefState.optional(), old: RefState.optional(), commits: z.array(Commit).optional() })) }),
});
const Side = z.looseObject({
  branch: z.looseObject({ name: z.string() }),
  commit: z.looseObject({ hash: z.string().regex(/^[0-9a-f]{7,40}$/i) }),
  repository: Repository,
});
const PullRequest = z.looseObject({
  actor: Account,
  repository: Repository,
  pullrequest: z.looseObject({ id: z.number().int(), title: z.string().optional(), source: Side, destination: Side }),
});
const Common = z.looseObject({ actor: Account, repository: Repository.optional() });

/** The repository UUID an unverified payload names (to find whose secret to check), or null. */
export function bitbucketRepositoryId(payload: unknown): string | null {
  const id = (payload as Json | null)?.repository?.uuid;
  return typeof id === "string" && Uuid.safeParse(id).success ? id : null;
}

const PR_EVENTS = new Set(["pullrequest:created", "pullrequest:updated"]);

/** Reads a delivery into one TriggerEvent; throws InvalidPayload when the payload is not what Bitbucket sends. */
export function parseBitbucketDelivery(eventName: string, body: unknown): TriggerEvent {
  const schema = eventName === "repo:push" ? Push : PR_EVENTS.has(eventName) ? PullRequest : Common;
  const payload = checkPayload(schema, body) as Json;
  const repo = payload.repository ?? {};
  const base = {
    forge: "bitbucket" as const,
    event: eventName,
    action: "",
    repository: { externalId: typeof repo.uuid === "string" ? repo.uuid : null, fullName: typeof repo.full_name === "string" ? repo.full_name : null },
    identityConflict: null as string | null,
    branch: null as string | null,
    tag: null as string | null,
    ref: "",
    commitSha: null as string | null,
    actor: payload.actor?.nickname ?? payload.actor?.display_name ?? "",
    changelog: "",
    prNumber: null as number | null,
    message: "",
    fromFork: false,
  };

  if (eventName === "repo:push") {
    // One push can move several refs; the first one that still exists is built (a deleted ref has new: null).
    const changes: Json[] = payload.push.changes;
    const change = changes.find((c) => c.new);
    if (!change) {
      const gone = changes.find((c) => c.old)?.old;
      return ignored({ ...base, ref: gone ? refOf(gone) : "" }, gone ? `${refOf(gone)} was deleted` : "the push names no changed ref");
    }
    const next = change.new;
    base.ref = refOf(next);
    base.commitSha = next.target.hash;
    base.message = next.target.message ?? "";
    const commits: Json[] = Array.isArray(change.commits) && change.commits.length ? change.commits : [next.target];
    // Bitbucket lists the newest commit first; the changelog reads oldest first.
    base.changelog = changelogOf([...commits].reverse().map((c) => ({ id: c.hash, message: c.message, author: { name: authorName(c.author?.raw) } })));
    if (next.type === "branch") return { ...base, branch: next.name, kind: "push", ignoredReason: null };
    if (next.type === "tag" || next.type === "annotated_tag") return { ...base, tag: next.name, kind: "tag", ignoredReason: null };
    return ignored(base, `push to ${next.type} ${next.name} is neither a branch nor a tag`);
  }

  if (PR_EVENTS.has(eventName)) {
    const pr = payload.pullrequest;
    base.action = eventName.slice("pullrequest:".length);
    base.prNumber = pr.id;
    base.ref = `refs/pull-requests/${pr.id}/from`;
    base.branch = pr.destination.branch.name;
    base.commitSha = pr.source.commit.hash;
    base.message = pr.title ?? "";
    base.changelog = pr.title ? `#${pr.id} ${clipped(pr.title)}` : "";
    if (pr.destination.repository.uuid !== base.repository.externalId)
      base.identityConflict = `pullrequest.destination.repository.uuid ${pr.destination.repository.uuid} differs from repository.uuid ${base.repository.externalId}`;
    // From another repository: a fork, built only when the project opts in (lib/webhooks/accept.ts).
    if (pr.source.repository.uuid !== pr.destination.repository.uuid) base.fromFork = true;
    return { ...base, kind: "pull_request", ignoredReason: null };
  }

  return ignored(base, `Bitbucket event "${eventName}" does not trigger builds`);
}

function refOf(state: Json): string {
  return state.type === "branch" ? `refs/heads/${state.name}` : `refs/tags/${state.name}`;
}

/** "Jane Doe <jane@example.com>" → "Jane Doe". */
function authorName(raw: unknown): string | undefined {
  return typeof raw === "string" ? raw.replace(/\s*<[^>]*>\s*$/, "") || undefined : undefined;
}
