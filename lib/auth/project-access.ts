// Project-level authorization (docs/authorization.md), applied by the request pipeline to every
// route whose rule is projectRole(minimum, via) before its handler runs.
//
// Project roles, highest first: maintainer (configures the project and its pipelines, manages
// members) > developer (starts, re-runs and cancels builds) > viewer (sees the project, its
// builds and logs). Instance owners and admins act as maintainers of every project; anyone else
// needs a membership. A project the caller may not see answers 404, as if it did not exist, so
// ids cannot be probed; one they see but may not change answers 403.
import type { Executor } from "../db/client.ts";
import type { ProjectRule } from "../route.ts";
import type { Principal } from "./principal.ts";
import { fail } from "../errors.ts";
import { roleAtLeast } from "./roles.ts";
import { findMemberRole, findProject, type Project, type ProjectRole } from "../db/projects.ts";
import { findBuild, type Build } from "../db/builds.ts";
import { findPipeline, type Pipeline } from "../db/pipelines.ts";
import { findDelivery, type Delivery } from "../webhooks/deliveries.ts";
import { findDeployment, type Deployment } from "../publishing/deployments.ts";

const RANK: Record<ProjectRole, number> = { maintainer: 3, developer: 2, viewer: 1 };

export function projectRoleAtLeast(role: ProjectRole, minimum: ProjectRole): boolean {
  return RANK[role] >= RANK[minimum];
}

/** What a project rule resolved: the project, the caller's role on it, and the resource the path named. */
export interface ProjectScope {
  /** Null only for a delivery that matched no project (which only admins may read). */
  project: Project | null;
  role: ProjectRole;
  build: Build | null;
  pipeline: Pipeline | null;
  delivery: Delivery | null;
  deployment: Deployment | null;
}

/** The caller's role on a project, or null when they may not see it. */
export async function projectRoleOf(db: Executor, principal: Principal, projectId: string): Promise<ProjectRole | null> {
  if (roleAtLeast(principal.role, "admin")) return "maintainer";
  const member = await findMemberRole(db, projectId, principal.user.id);
  // An API token never outranks its own role: a developer-role token cannot configure a project,
  // even when its creator maintains it.
  if (member === "maintainer" && principal.kind === "api_token" && !roleAtLeast(principal.role, "maintainer")) return "developer";
  return member;
}

const NOUN: Record<ProjectRule["via"], string> = {
  project_id: "project",
  pipeline_id: "pipeline",
  build_id: "build",
  delivery_id: "delivery",
  deployment_id: "deployment",
};

/**
 * Loads what the rule's path parameter names and checks the caller's role on its project:
 * 404 when it does not exist or the caller may not see it, 403 when their role is too low.
 */
export async function authorizeProject(db: Executor, principal: Principal, rule: ProjectRule, params: Record<string, string>): Promise<ProjectScope> {
  const id = params[rule.via] ?? "";
  const hidden = (): never => fail("not_found", `No ${NOUN[rule.via]} with that id.`);
  const scope: ProjectScope = { project: null, role: "viewer", build: null, pipeline: null, delivery: null, deployment: null };
  let projectId: string | null;
  switch (rule.via) {
    case "project_id":
      projectId = id;
      break;
    case "pipeline_id":
      scope.pipeline = (await findPipeline(db, id)) ?? hidden();
      projectId = scope.pipeline.project_id;
      break;
    case "build_id":
      scope.build = (await findBuild(db, id)) ?? hidden();
      projectId = scope.build.project_id;
      break;
    case "delivery_id":
      scope.delivery = (await findDelivery(db, id)) ?? hidden();
      projectId = scope.delivery.project_id;
      break;
    case "deployment_id":
      scope.deployment = (await findDeployment(db, id)) ?? hidden();
      projectId = scope.deployment.project_id;
      break;
  }
  if (projectId === null) {
    // A delivery that matched no project belongs to the instance: admins only.
    if (!roleAtLeast(principal.role, "admin")) hidden();
    scope.role = "maintainer";
    return scope;
  }
  scope.project = await findProject(db, projectId);
  const role = scope.project ? await projectRoleOf(db, principal, projectId) : null;
  if (!scope.project || !role) hidden();
  if (!projectRoleAtLeast(role!, rule.minimum)) fail("forbidden", `This needs the ${rule.minimum} role on the project; yours is ${role}.`);
  scope.role = role!;
  return scope;
}

// What handlers of project routes read: the pipeline has loaded and authorized these already.
type ScopedContext = { scope: ProjectScope | null };

export function scopedProject(ctx: ScopedContext): Project {
  return ctx.scope?.project ?? unscoped("project");
}
export function scopedBuild(ctx: ScopedContext): Build {
  return ctx.scope?.build ?? unscoped("build");
}
export function scopedPipeline(ctx: ScopedContext): Pipeline {
  return ctx.scope?.pipeline ?? unscoped("pipeline");
}
export function scopedDelivery(ctx: ScopedContext): Delivery {
  return ctx.scope?.delivery ?? unscoped("delivery");
}
export function scopedDeployment(ctx: ScopedContext): Deployment {
  return ctx.scope?.deployment ?? unscoped("deployment");
}

function unscoped(what: string): never {
  // A programming error: the route's rule does not name this resource.
  throw new Error(`this route's auth rule does not resolve a ${what}`);
}
