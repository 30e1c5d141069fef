// Project-level authorization (docs/authorization.md), applied by the request pipeline to every
// route whose rule is projectRole(minimum, via) before its handler runs.
//
// Project roles, highest first: maintainer (configures the project and its pipelines, manages
// members) > developer (starts, re-runs and cancels builds) > viewer (sees the project, its
// builds and logs). Instance owners and admins act as maintainers of every project; anyone else
// needs a membership. A project the caller may not see answers 404, as if it did not exist, so
// ids cannot be probed; one they see but may not change answers 403.
import type { Executor } from "../db/client.ts";
import type { ProjectRule, ProjectScopeParam } from "../http/route.ts";
import type { Principal } from "./principal.ts";
import { fail } from "../http/errors.ts";
import { roleAtLeast } from "./roles.ts";
import { findMemberRole, findProject, type Project, type ProjectRole } from "../projects/store.ts";
import { findBuild, type Build } from "../builds/store.ts";
import { findPipeline, type Pipeline } from "../pipelines/store.ts";
import { findDelivery, type Delivery } from "../webhooks/deliveries.ts";
import type { Deployment } from "../publishing/deployments.ts";

const RANK: Record<ProjectRole, number> = { maintainer: 3, developer: 2, viewer: 1 };

export function projectRoleAtLeast(role: ProjectRole, minimum: ProjectRole): boolean {
  return RANK[role] >= RANK[minimum];
}

/** What each path parameter of a project rule names, loaded before the handler runs. */
interface ScopedResource {
  project_id: unknown;
  pipeline_id: { pipeline: Pipeline };
  build_id: { build: Build };
  delivery_id: { delivery: Delivery };
  deployment_id: { deployment: Deployment };
}

/**
 * What a projectRole(minimum, via) rule authorized: the caller, their role on the project, the
 * project and the resource `via` names. The project is null only for a delivery that matched no
 * project (which only admins may read).
 */
export type ProjectAccess<Via extends ProjectScopeParam> = {
  principal: Principal;
  role: ProjectRole;
  project: Via extends "delivery_id" ? Project | null : Project;
} & ScopedResource[Via];

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
export async function authorizeProject<Via extends ProjectScopeParam>(
  db: Executor,
  principal: Principal,
  rule: ProjectRule<Via>,
  params: Record<string, string>,
): Promise<ProjectAccess<Via>> {
  const id = params[rule.via] ?? "";
  const hidden = (): never => fail("not_found", `No ${NOUN[rule.via]} with that id.`);
  const { projectId, ...resource } = (await loadScoped(db, rule.via, id)) ?? hidden();
  const access = { ...resource, principal, project: null as Project | null, role: "viewer" as ProjectRole };
  if (projectId === null) {
    // A delivery that matched no project belongs to the instance: admins only.
    if (!roleAtLeast(principal.role, "admin")) hidden();
    access.role = "maintainer";
    return access as ProjectAccess<Via>;
  }
  access.project = await findProject(db, projectId);
  const role = access.project ? await projectRoleOf(db, principal, projectId) : null;
  if (!access.project || !role) return hidden();
  if (!projectRoleAtLeast(role, rule.minimum)) fail("forbidden", `This needs the ${rule.minimum} role on the project; yours is ${role}.`);
  access.role = role;
  return access as ProjectAccess<Via>;
}

/** The resource `via` names and the id of its project; null when it does not exist. */
async function loadScoped(
  db: Executor,
  via: ProjectScopeParam,
  id: string,
): Promise<({ projectId: string | null } & Partial<{ pipeline: Pipeline; build: Build; delivery: Delivery; deployment: Deployment }>) | null> {
  switch (via) {
    case "project_id":
      return { projectId: id };
    case "pipeline_id": {
      const pipeline = await findPipeline(db, id);
      return pipeline && { projectId: pipeline.project_id, pipeline };
    }
    case "build_id": {
      const build = await findBuild(db, id);
      return build && { projectId: build.project_id, build };
    }
    case "delivery_id": {
      const delivery = await findDelivery(db, id);
      return delivery && { projectId: delivery.project_id, delivery };
    }
    case "deployment_id": {
      // Publishing (its schemas) loads with the first deployment route, not with the daemon (issue 20).
      const { findDeployment } = await import("../publishing/deployments.ts");
      const deployment = await findDeployment(db, id);
      return deployment && { projectId: deployment.project_id, deployment };
    }
  }
}
