// GitLab deliveries: the payload names the project; its current webhook token must match
// X-Gitlab-Token (checked by the receiver against that repository). Read into a TriggerEvent
// (docs/webhooks.md; headers and payloads as documented at
// https://docs.gitlab.com/user/project/integrations/webhook_events/).
import { changelogOf, ignored, type TriggerEvent } from "./event.ts";

type Json = Record<string, any>;

/** The project id the payload names (what the token is checked against), or null. */
export function gitlabProjectId(payload: Json): string | null {
  const id = payload.project?.id ?? payload.project_id;
  return id === undefined || id === null ? null : String(id);
}

export function parseGitlabDelivery(eventHeader: string, payload: Json): TriggerEvent {
  const kindName: string = payload.object_kind ?? eventHeader;
  const attrs = payload.object_attributes ?? {};
  const base = {
    host: "gitlab" as const,
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
    base.changelog = attrs.title ? `!${base.prNumber} ${attrs.title}` : "";
    if (attrs.target_project_id !== undefined && String(attrs.target_project_id) !== base.repository.externalId) {
      base.identityConflict = `object_attributes.target_project_id ${attrs.target_project_id} differs from project.id ${base.repository.externalId}`;
    }
    const action = base.action;
    const newCode = action === "open" || action === "reopen" || (action === "update" && typeof attrs.oldrev === "string" && attrs.oldrev !== "");
    if (!newCode) {
      return ignored(base, action === "update" ? "merge request update without new commits (no oldrev)" : `merge request action "${action}" brings no new commit`);
    }
    if (String(attrs.source_project_id) !== String(attrs.target_project_id)) return ignored(base, "merge request from a fork");
    if (!base.commitSha) return ignored(base, "merge request names no last commit");
    return { ...base, kind: "pull_request", ignoredReason: null };
  }

  return ignored(base, `GitLab event "${kindName}" does not trigger builds`);
}
