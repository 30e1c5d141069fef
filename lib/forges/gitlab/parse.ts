// GitLab deliveries: the payload names the project; its current webhook token must match
// X-Gitlab-Token (checked by the receiver against that repository). Read into a TriggerEvent
// (docs/webhooks.md; headers and payloads as documented at
// https://docs.gitlab.com/user/project/integrations/webhook_events/).
import { z } from "zod";
import { NumericId, PayloadCommit, changelogOf, checkPayload, clipped, ignored, type TriggerEvent } from "../event.ts";

type Json = Record<string, any>;

// The fields Roost reads, typed as GitLab sends them (docs linked above); anything else passes.
const Project = z.looseObject({ id: NumericId, path_with_namespace: z.string().optional() });
const Common = z.looseObject({
  object_kind: z.string().optional(),
  project: Project.optional(),
  project_id: NumericId.optional(),
  user_username: z.string().nullish(),
  user_name: z.string().nullish(),
  user: z.looseObject({ username: z.string().nullish() }).nullish(),
  object_attributes: z.looseObject({ action: z.string().nullish() }).optional(),
});
const Push = Common.extend({
  project: Project,
  ref: z.string(),
  after: z.string().optional(),
  // null when the push deletes the ref
  checkout_sha: z.string().nullish(),
  commits: z.array(PayloadCommit).optional(),
});
const MergeRequest = Common.extend({
  project: Project,
  object_attributes: z.looseObject({
    action: z.string().nullish(),
    iid: z.number().int(),
    title: z.string().optional(),
    target_branch: z.string(),
    target_project_id: NumericId,
    source_project_id: NumericId,
    oldrev: z.string().nullish(),
    last_commit: z.looseObject({ id: z.string() }).nullish(),
  }),
});

/** The payload checked for its object_kind (push, tag_push and merge_request in full); throws InvalidPayload. */
export function checkGitlabPayload(eventHeader: string, payload: unknown): Json {
  const common = checkPayload(Common, payload) as Json;
  const kind = common.object_kind ?? eventHeader;
  return checkPayload(kind === "push" || kind === "tag_push" ? Push : kind === "merge_request" ? MergeRequest : Common, payload) as Json;
}

/** The project id the payload names (what the token is checked against), or null. */
export function gitlabProjectId(payload: Json): string | null {
  const id = payload.project?.id ?? payload.project_id;
  return id === undefined || id === null ? null : String(id);
}

/** Reads a delivery into one TriggerEvent; throws InvalidPayload when the payload is not what GitLab sends. */
export function parseGitlabDelivery(eventHeader: string, body: unknown): TriggerEvent {
  const payload = checkGitlabPayload(eventHeader, body);
  const kindName: string = payload.object_kind ?? eventHeader;
  const attrs = payload.object_attributes ?? {};
  const base = {
    forge: "gitlab" as const,
    event: kindName,
    action: typeof attrs.action === "string" ? attrs.action : "",
    repository: { externalId: gitlabProjectId(payload), fullName: payload.project?.path_with_namespace ?? null },
    identityConflict: null as string | null,
    branch: null as string | null,
    tag: null as string | null,
    ref: "",
    commitSha: null as string | null,
    actor: payload.user_username ?? payload.user?.username ?? payload.user_name ?? "",
    changelog: "",
    prNumber: null as number | null,
    message: "",
    fromFork: false,
  };
  if (payload.project_id !== undefined && payload.project?.id !== undefined && String(payload.project_id) !== String(payload.project.id)) {
    base.identityConflict = `project_id ${payload.project_id} differs from project.id ${payload.project.id}`;
  }

  if (kindName === "push" || kindName === "tag_push") {
    const ref: string = payload.ref ?? "";
    base.ref = ref;
    if (/^0{40}$/.test(payload.after ?? "") || !payload.checkout_sha) return ignored(base, `${ref} was deleted`);
    // checkout_sha, not `after`: for an annotated tag `after` is the tag object.
    base.commitSha = payload.checkout_sha;
    const commits: Json[] = Array.isArray(payload.commits) ? payload.commits : [];
    base.message = (commits.find((c) => c.id === payload.checkout_sha) ?? commits[commits.length - 1])?.message ?? "";
    base.changelog = changelogOf(commits);
    if (kindName === "tag_push" && ref.startsWith("refs/tags/")) return { ...base, tag: ref.slice("refs/tags/".length), kind: "tag", ignoredReason: null };
    if (kindName === "push" && ref.startsWith("refs/heads/")) return { ...base, branch: ref.slice("refs/heads/".length), kind: "push", ignoredReason: null };
    return ignored(base, `${kindName} to ${ref} is neither a branch nor a tag`);
  }

  if (kindName === "merge_request") {
    base.prNumber = typeof attrs.iid === "number" ? attrs.iid : null;
    base.ref = `refs/merge-requests/${base.prNumber}/head`;
    base.branch = attrs.target_branch ?? null;
    base.commitSha = attrs.last_commit?.id ?? null;
    base.message = attrs.title ?? "";
    base.changelog = attrs.title ? `!${base.prNumber} ${clipped(attrs.title)}` : "";
    if (attrs.target_project_id !== undefined && String(attrs.target_project_id) !== base.repository.externalId) {
      base.identityConflict = `object_attributes.target_project_id ${attrs.target_project_id} differs from project.id ${base.repository.externalId}`;
    }
    const action = base.action;
    const newCode = action === "open" || action === "reopen" || (action === "update" && typeof attrs.oldrev === "string" && attrs.oldrev !== "");
    if (!newCode) {
      return ignored(
        base,
        action === "update" ? "merge request update without new commits (no oldrev)" : `merge request action "${action}" brings no new commit`,
      );
    }
    // From another project: a fork, built only when the project opts in (lib/webhooks/accept.ts).
    if (String(attrs.source_project_id) !== String(attrs.target_project_id)) base.fromFork = true;
    if (!base.commitSha) return ignored(base, "merge request names no last commit");
    return { ...base, kind: "pull_request", ignoredReason: null };
  }

  return ignored(base, `GitLab event "${kindName}" does not trigger builds`);
}
