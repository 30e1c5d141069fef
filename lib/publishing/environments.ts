// Environments (docs/publishing.md "Environments"): where a project publishes, each with its own
// protection. GitHub's deployment environments are the model
// (https://docs.github.com/en/actions/managing-workflow-runs-and-deployments/managing-deployments/managing-environments-for-deployment):
// required reviewers, branch and tag rules, and secrets that only a job for that environment gets.
// Here: requires_approval with approvers (the project's maintainers, or the maintainers listed),
// allowed_refs (ref patterns as protected_refs, lib/pipelines/branch-patterns.ts), and secrets kept as
// variables of the environment's scope (lib/variables/variables.ts).
import { z } from "zod";
import type { Executor, SqlCondition } from "../db/client.ts";
import { all, bool, json, num, one, rowMapper, str, strOrNull } from "../db/client.ts";
import { newId } from "../auth/secrets.ts";
import { matchRefPatterns } from "../pipelines/branch-patterns.ts";
import { EnvironmentName, RefPatterns } from "./publishers.ts";
import type { Build } from "../builds/store.ts";

export { EnvironmentName };

export const PutEnvironmentBody = z
  .object({
    requires_approval: z.boolean().default(false).describe("a publish waits until an approver approves it"),
    approvers: z
      .array(z.email().max(254))
      .max(50)
      .default([])
      .describe("e-mails of the users who may approve; each must be a maintainer of the project. [] means every maintainer of the project"),
    allowed_refs: RefPatterns.default([]).describe(
      "only builds of these refs publish here: branch patterns (main, release/*), tags as refs/tags/v*. [] means any ref; a pull request never publishes",
    ),
  })
  .strict();
export type PutEnvironmentBody = z.output<typeof PutEnvironmentBody>;

export const EnvironmentResource = z.object({
  id: z.string(),
  name: z.string(),
  requires_approval: z.boolean(),
  approvers: z.array(z.object({ id: z.string(), email: z.string() })).describe("[]: the project's maintainers"),
  allowed_refs: z.array(z.string()),
  created_at: z.number().int(),
  updated_at: z.number().int(),
  created_by: z.string().nullable(),
});

/** One environment (table environments). */
const toEnvironment = rowMapper({
  id: str,
  project_id: str,
  name: str,
  requires_approval: bool,
  /** User ids; [] = the project's maintainers. */
  approvers: json<string[]>(),
  allowed_refs: json<string[]>(),
  created_by: strOrNull,
  created_at: num,
  updated_at: num,
});
export type Environment = ReturnType<typeof toEnvironment>;

export async function toPublicEnvironment(db: Executor, e: Environment): Promise<z.output<typeof EnvironmentResource>> {
  const approvers = [];
  for (const id of e.approvers) {
    const row = await one(db, "SELECT email FROM users WHERE id = ?", [id]);
    approvers.push({ id, email: row ? str(row, "email") : "" });
  }
  return {
    id: e.id,
    name: e.name,
    requires_approval: e.requires_approval,
    approvers,
    allowed_refs: e.allowed_refs,
    created_at: e.created_at,
    updated_at: e.updated_at,
    created_by: e.created_by,
  };
}

export async function listEnvironments(db: Executor, projectId: string): Promise<Environment[]> {
  return (await all(db, "SELECT * FROM environments WHERE project_id = +? ORDER BY name", [projectId])).map(toEnvironment);
}

export async function findEnvironment(db: Executor, projectId: string, name: string): Promise<Environment | null> {
  const row = await one(db, "SELECT * FROM environments WHERE project_id = ? AND name = ?", [projectId, name]);
  return row ? toEnvironment(row) : null;
}

/**
 * That a project's environment is still as read, in what planning a deployment takes from it
 * (whether it exists, requires approval, which refs it allows), for a guarded write batch
 * (lib/runners/job-lifecycle.ts finishJob). Compared by value: updated_at has the clock's
 * resolution, and two changes may share it.
 */
export function environmentUnchanged(projectId: string, name: string, read: Environment | null): SqlCondition {
  if (!read) return { sql: "NOT EXISTS (SELECT 1 FROM environments WHERE project_id = ? AND name = ?)", args: [projectId, name] };
  return {
    sql: "EXISTS (SELECT 1 FROM environments WHERE id = ? AND requires_approval = ? AND json(allowed_refs) = json(?))",
    args: [read.id, read.requires_approval ? 1 : 0, JSON.stringify(read.allowed_refs)],
  };
}

export async function findEnvironmentById(db: Executor, id: string): Promise<Environment | null> {
  const row = await one(db, "SELECT * FROM environments WHERE id = ?", [id]);
  return row ? toEnvironment(row) : null;
}

/**
 * The approvers' user ids, or for each e-mail that is not a maintainer of the project why not
 * (by its index in the list): an approver must be able to call the approve route, whose rule is
 * the project's maintainer role.
 */
export async function resolveApprovers(
  db: Executor,
  projectId: string,
  emails: string[],
): Promise<{ ids: string[]; problems: { index: number; message: string }[] }> {
  const ids: string[] = [];
  const problems: { index: number; message: string }[] = [];
  for (const [index, email] of emails.entries()) {
    const user = await one(db, "SELECT id, role, active FROM users WHERE email = ?", [email.trim().toLowerCase()]);
    if (!user || !bool(user, "active")) {
      problems.push({ index, message: `no active user has the e-mail ${email}` });
      continue;
    }
    const id = str(user, "id");
    const instanceRole = str(user, "role");
    const member = await one(db, "SELECT role FROM project_members WHERE project_id = ? AND user_id = ?", [projectId, id]);
    if (instanceRole !== "owner" && instanceRole !== "admin" && (!member || str(member, "role") !== "maintainer")) {
      problems.push({ index, message: `${email} is not a maintainer of this project; approvers must be` });
      continue;
    }
    if (!ids.includes(id)) ids.push(id);
  }
  return { ids, problems };
}

/** Creates or replaces an environment (its secrets are kept); returns it and whether it was new. */
export async function putEnvironment(
  db: Executor,
  projectId: string,
  name: string,
  body: PutEnvironmentBody,
  approverIds: string[],
  actorId: string | null,
  now: number,
): Promise<{ environment: Environment; created: boolean }> {
  // One upsert, so each PUT's settings are written and answered as written: a read and then an
  // insert let two PUTs of a new environment at once both find none; the second insert did nothing,
  // and both answered created with the first's settings (the second's never written). Created: the
  // row has the id this statement made.
  const id = newId();
  const row = await one(
    db,
    `INSERT INTO environments (id, project_id, name, requires_approval, approvers, allowed_refs, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (project_id, name) DO UPDATE SET requires_approval = excluded.requires_approval, approvers = excluded.approvers,
       allowed_refs = excluded.allowed_refs, updated_at = excluded.updated_at
     RETURNING *`,
    [id, projectId, name, body.requires_approval ? 1 : 0, JSON.stringify(approverIds), JSON.stringify(body.allowed_refs), actorId, now, now],
  );
  const environment = toEnvironment(row!);
  return { environment, created: environment.id === id };
}

/** Deletes an environment and its secrets; its deployments stay, with its name. */
export async function deleteEnvironment(db: Executor, projectId: string, name: string): Promise<boolean> {
  return (await db.execute({ sql: "DELETE FROM environments WHERE project_id = ? AND name = ?", args: [projectId, name] })).rowsAffected === 1;
}

/**
 * Null when the environment takes a publish of this build, else why not (a sentence for the
 * deployment): never a pull request (nor a fork's, whose builds are pull requests too); with
 * allowed_refs, only a build of a matching branch or tag whose commit is that ref's own (a
 * manual build naming its commit could pair a protected name with any commit).
 */
export function whyEnvironmentRefuses(
  env: Pick<Environment, "name" | "allowed_refs">,
  build: Pick<Build, "branch" | "trigger_event" | "context">,
): string | null {
  if (build.trigger_event === "pull_request") return `environment ${env.name} never takes a pull request's build`;
  if ((build.context as { fork?: boolean } | null)?.fork === true) return `environment ${env.name} never takes a build of a fork`;
  if (env.allowed_refs.length === 0) return null;
  if ((build.context as { commit_pinned?: boolean } | null)?.commit_pinned === true)
    return `environment ${env.name} allows only [${env.allowed_refs.join(", ")}], and this build's commit was named by hand`;
  const kind = build.trigger_event === "tag" ? "tag" : "branch";
  const match = matchRefPatterns(env.allowed_refs, { kind, name: build.branch });
  return match.matched ? null : `environment ${env.name} does not take this build: ${match.reason}`;
}

/**
 * Who may decide a waiting deployment, by e-mail, for the notification that asks them to: the
 * environment's listed approvers, or, when it lists none (or is gone), the project's maintainers
 * (instance admins may decide too, but are not everyone's to mail). Deactivated users are left out.
 */
export async function approverEmails(db: Executor, projectId: string, environmentId: string | null): Promise<string[]> {
  const env = environmentId ? await findEnvironmentById(db, environmentId) : null;
  if (env && env.approvers.length > 0) {
    const emails: string[] = [];
    for (const id of env.approvers) {
      const row = await one(db, "SELECT email FROM users WHERE id = ? AND active = 1", [id]);
      if (row) emails.push(str(row, "email"));
    }
    return emails;
  }
  const rows = await all(
    db,
    "SELECT u.email FROM project_members m JOIN users u ON u.id = m.user_id WHERE m.project_id = +? AND m.role = 'maintainer' AND u.active = 1 ORDER BY u.email",
    [projectId],
  );
  return rows.map((r) => str(r, "email"));
}
