// Project-level authorization (docs/authorization.md): one function every project-scoped
// handler calls as its one visible authorization line.
//
// Project roles, highest first: maintainer (configures the project and its pipelines, manages
// members) > developer (starts, re-runs and cancels builds) > viewer (sees the project, its
// builds and logs). Instance owners and admins act as maintainers of every project; anyone else
// needs a membership. A project the caller may not see answers 404, as if it did not exist.
import type { RequestContext } from "../context.ts";
import { fail } from "../errors.ts";
import { roleAtLeast } from "./roles.ts";
import { findMemberRole, findProject, type Project, type ProjectRole } from "../db/projects.ts";
import type { Executor } from "../db/client.ts";
import type { User } from "../db/users.ts";

const RANK: Record<ProjectRole, number> = { maintainer: 3, developer: 2, viewer: 1 };

export function projectRoleAtLeast(role: ProjectRole, minimum: ProjectRole): boolean {
  return RANK[role] >= RANK[minimum];
}

/** The caller's role on a project, or null when they may not see it. */
export async function projectRoleOf(ctx: RequestContext, projectId: string): Promise<ProjectRole | null> {
  const principal = ctx.principal!;
  if (roleAtLeast(principal.role, "admin")) return "maintainer";
  const member = await findMemberRole(ctx.db, projectId, principal.user.id);
  // An API token never outranks its own role: a developer-role token cannot configure a project,
  // even when its creator maintains it.
  if (member === "maintainer" && principal.kind === "api_token" && !roleAtLeast(principal.role, "maintainer")) return "developer";
  return member;
}

/**
 * Whether `user` may see the project now (an active admin or owner, or a member): what a stream
 * token's holder is re-checked against when the stream opens, since the token outlives the request
 * that minted it.
 */
export async function userMaySeeProject(db: Executor, user: User | null, projectId: string): Promise<boolean> {
  if (!user || !user.active) return false;
  return roleAtLeast(user.role, "admin") || (await findMemberRole(db, projectId, user.id)) !== null;
}

/** Loads the project and checks the caller has at least `minimum` on it: 404 when invisible, 403 when too low. */
export async function requireProjectRole(ctx: RequestContext, projectId: string, minimum: ProjectRole): Promise<{ project: Project; role: ProjectRole }> {
  const project = await findProject(ctx.db, projectId);
  const role = project ? await projectRoleOf(ctx, projectId) : null;
  if (!project || !role) fail("not_found", "No project with that id.");
  if (!projectRoleAtLeast(role, minimum)) fail("forbidden", `This needs the ${minimum} role on the project; yours is ${role}.`);
  return { project, role };
}
