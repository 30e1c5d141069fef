// GitHub deliveries: verify the signature over the raw bytes, then read the payload into a
// TriggerEvent (docs/webhooks.md; headers and payloads as documented at
// https://docs.github.com/en/webhooks/webhook-events-and-payloads).
import { createHmac, timingSafeEqual } from "node:crypto";
import { changelogOf, ignored, type TriggerEvent } from "./event.ts";

/** X-Hub-Signature-256 = "sha256=" + hex HMAC-SHA256(secret, raw body); constant-time compare. */
export function verifyGithubSignature(secret: string, body: Uint8Array, header: string | null): boolean {
  if (!header || !/^sha256=[0-9a-f]{64}$/.test(header)) return false;
  const expected = createHmac("sha256", secret).update(body).digest();
  const given = Buffer.from(header.slice("sha256=".length), "hex");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** JSON deliveries, or form deliveries whose `payload` field holds the JSON. */
export function decodeGithubBody(body: Uint8Array, contentType: string | null): unknown {
  const text = new TextDecoder().decode(body);
  if ((contentType ?? "").toLowerCase().startsWith("application/x-www-form-urlencoded")) {
    const payload = new URLSearchParams(text).get("payload");
    if (payload === null) throw new SyntaxError("form delivery without a payload field");
    return JSON.parse(payload);
  }
  return JSON.parse(text);
}

type Json = Record<string, any>;

const NEW_CODE_ACTIONS = new Set(["opened", "synchronize", "reopened"]);

export function parseGithubDelivery(eventName: string, payload: Json): TriggerEvent {
  const repo = payload.repository ?? {};
  const base = {
    host: "github" as const,
    event: eventName,
    action: typeof payload.action === "string" ? payload.action : "",
    repository: { externalId: repo.id === undefined || repo.id === null ? null : String(repo.id), fullName: typeof repo.full_name === "string" ? repo.full_name : null },
    identityConflict: null as string | null,
    branch: null as string | null,
    tag: null as string | null,
    ref: "",
    commitSha: null as string | null,
    actor: payload.sender?.login ?? "",
    changelog: "",
    prNumber: null as number | null,
    message: "",
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
    if (ref.startsWith("refs/heads/")) return { ...base, branch: ref.slice("refs/heads/".length), kind: "push", ignoredReason: null };
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
    base.changelog = pr.title ? `#${base.prNumber} ${pr.title}` : "";
    const baseRepoId = pr.base?.repo?.id;
    if (baseRepoId !== undefined && String(baseRepoId) !== base.repository.externalId) {
      base.identityConflict = `pull_request.base.repo.id ${baseRepoId} differs from repository.id ${base.repository.externalId}`;
    }
    if (!NEW_CODE_ACTIONS.has(base.action)) return ignored(base, `pull request action "${base.action}" brings no new commit`);
    // A deleted fork (head.repo null) or another repository: never run untrusted code with this project's secrets.
    if (!pr.head?.repo || String(pr.head.repo.id) !== String(pr.base?.repo?.id)) return ignored(base, "pull request from a fork");
    if (!base.commitSha) return ignored(base, "pull request names no head commit");
    return { ...base, kind: "pull_request", ignoredReason: null };
  }

  return ignored(base, `GitHub event "${eventName}" does not trigger builds`);
}
