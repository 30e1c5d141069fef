// Projects (docs/api.md "Projects") and their members (docs/authorization.md "Project roles").
import type { Executor } from "../db/client.ts";
import type { InValue } from "../db/database.ts";
import { all, json, likePattern, num, one, rowMapper, str, strOrNull } from "../db/client.ts";
import { newId } from "../auth/secrets.ts";
import type { ProjectResource } from "./wire.ts";
import type { WireOf } from "../schemas/shared.ts";

export type ProjectRole = "maintainer" | "developer" | "viewer";

const SELECT = `SELECT p.*, r.full_name AS repository_full_name, r.avatar_url AS repository_avatar_url, r.provider AS repository_provider
  FROM projects p JOIN repositories r ON r.id = p.repository_id`;

/** One project (table projects), with its repository's name, avatar and forge joined in. */
const toProject = rowMapper({
  id: str,
  name: str,
  description: str,
  repository_id: str,
  default_branch: str,
  settings: json<Record<string, unknown>>(),
  created_by: strOrNull,
  created_at: num,
  updated_at: num,
  repository_full_name: str,
  repository_avatar_url: str,
  repository_provider: strOrNull,
});
export type Project = ReturnType<typeof toProject>;

/** The API shape, with the caller's role on it. */
export function toPublicProject(p: Project, currentUserRole: ProjectRole): WireOf<typeof ProjectResource> {
  return {
    id: p.id,
    name: p.name,
    description: p.description,
    default_branch: p.default_branch,
    created_at: p.created_at,
    updated_at: p.updated_at,
    created_by: p.created_by ?? "",
    current_user_role: currentUserRole,
    repository_id: p.repository_id,
    repository_full_name: p.repository_full_name,
    repository_avatar_url: p.repository_avatar_url,
    repository_provider: p.repository_provider,
    settings: p.settings,
  };
}

export async function insertProject(
  db: Executor,
  f: { name: string; description: string; repositoryId: string; defaultBranch: string; settings: Record<string, unknown>; createdBy: string },
  now: number,
): Promise<string> {
  const id = newId();
  await db.execute({
    sql: `INSERT INTO projects (id, name, description, repository_id, default_branch, settings, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    args: [id, f.name, f.description, f.repositoryId, f.defaultBranch, JSON.stringify(f.settings), f.createdBy, now, now],
  });
  await db.execute({ sql: "INSERT INTO project_members (project_id, user_id, role, created_at) VALUES (?, ?, 'maintainer', ?)", args: [id, f.createdBy, now] });
  return id;
}

/**
 * Whether the project builds pull requests from forks: off unless its settings say
 * `build_fork_pull_requests: true`. Such builds get no secret and read the target branch's pipeline
 * file (docs/pipelines.md, docs/secrets.md).
 */
export function buildsForkPullRequests(project: Project | null): boolean {
  return project?.settings.build_fork_pull_requests === true;
}

export async function findProject(db: Executor, id: string): Promise<Project | null> {
  const row = await one(db, `${SELECT} WHERE p.id = +?`, [id]);
  return row ? toProject(row) : null;
}

export async function updateProject(
  db: Executor,
  id: string,
  change: { name?: string; description?: string; default_branch?: string; settings?: Record<string, unknown> },
  now: number,
): Promise<void> {
  await db.execute({
    sql: `UPDATE projects SET name = COALESCE(?, name), description = COALESCE(?, description), default_branch = COALESCE(?, default_branch),
          settings = COALESCE(?, settings), updated_at = ? WHERE id = ?`,
    args: [change.name ?? null, change.description ?? null, change.default_branch ?? null, change.settings ? JSON.stringify(change.settings) : null, now, id],
  });
}

/** Deleting a project deletes its webhook token with it (a column of the row), so nothing it minted outlives it. */
export async function deleteProject(db: Executor, id: string): Promise<void> {
  await db.execute({ sql: "DELETE FROM projects WHERE id = ?", args: [id] });
}

/**
 * The one project that builds this catalogue repository, or null. Projects unlinked by the
 * one-project-per-repository migration (schema.sql migration 7) build nothing.
 */
export async function findProjectBuildingRepository(db: Executor, repositoryId: string): Promise<string | null> {
  const row = await one(db, "SELECT id FROM projects WHERE repository_id = ? AND unlinked_at IS NULL", [repositoryId]);
  return row ? str(row, "id") : null;
}

/**
 * The project that builds a repository (a repository is built by at most one, schema.sql
 * migration 7), read whole, and its pipelines' state as of the same read (the value
 * pipelinesState, lib/pipelines/store.ts, reads; null without a project): a write batch planned
 * from them is guarded by both.
 */
export async function findProjectOfRepositoryAsRead(db: Executor, repositoryId: string): Promise<{ project: Project | null; pipelinesVersion: number | null }> {
  const row = await one(db, `${SELECT} WHERE p.repository_id = +? AND p.unlinked_at IS NULL`, [repositoryId]);
  return row ? { project: toProject(row), pipelinesVersion: num(row, "pipelines_version") } : { project: null, pipelinesVersion: null };
}

/**
 * An SQL condition that holds while the repository is built by `project` with the default branch
 * and fork setting it was read with (or, read with none, by no project): a webhook delivery's write
 * batch, planned from that read, is guarded by it.
 */
export function buildsRepositoryAsRead(repositoryId: string, project: Project | null): { sql: string; args: InValue[] } {
  if (!project) return { sql: "NOT EXISTS (SELECT 1 FROM projects WHERE repository_id = ? AND unlinked_at IS NULL)", args: [repositoryId] };
  return {
    sql: `EXISTS (SELECT 1 FROM projects WHERE id = ? AND repository_id = ? AND unlinked_at IS NULL AND default_branch = ?
            AND (json_extract(settings, '$.build_fork_pull_requests') IS 1) = ?)`,
    args: [project.id, repositoryId, project.default_branch, buildsForkPullRequests(project) ? 1 : 0],
  };
}

/**
 * Whether some project already builds this host repository, through this catalogue entry or
 * another integration's entry for the same repository (same host, same numeric id).
 */
export async function forgeRepositoryIsLinked(db: Executor, repo: { provider: string; host_url: string; external_id: string }): Promise<boolean> {
  const row = await one(
    db,
    `SELECT 1 FROM projects p JOIN repositories r ON r.id = p.repository_id
     WHERE r.provider = +? AND r.host_url = +? AND r.external_id = +? AND p.unlinked_at IS NULL LIMIT 1`,
    [repo.provider, repo.host_url, repo.external_id],
  );
  return row !== null;
}

/**
 * Projects visible to a user with their role on each: every project for instance admins and
 * owners (as maintainer), otherwise those they are a member of.
 */
export async function listProjects(
  db: Executor,
  options: { userId: string; seesAll: boolean; q: string | undefined; limit: number; offset: number },
): Promise<{ projects: { project: Project; role: ProjectRole }[]; total: number }> {
  const where: string[] = [];
  const args: (string | number)[] = [options.userId];
  if (!options.seesAll) where.push("m.role IS NOT NULL");
  if (options.q) {
    where.push("(lower(p.name) LIKE ? ESCAPE '\\' OR lower(r.full_name) LIKE ? ESCAPE '\\')");
    const q = likePattern(options.q);
    args.push(q, q);
  }
  const clause = where.length ? `WHERE ${where.join(" AND ")}` : "";
  const from = `FROM projects p JOIN repositories r ON r.id = p.repository_id LEFT JOIN project_members m ON m.project_id = p.id AND m.user_id = +?`;
  const total = await one(db, `SELECT COUNT(*) AS n ${from} ${clause}`, args);
  const rows = await all(
    db,
    `SELECT p.*, r.full_name AS repository_full_name, r.avatar_url AS repository_avatar_url, r.provider AS repository_provider, m.role AS member_role
     ${from} ${clause} ORDER BY p.name, p.id LIMIT +? OFFSET +?`,
    [...args, options.limit, options.offset],
  );
  return {
    projects: rows.map((row) => ({ project: toProject(row), role: options.seesAll ? "maintainer" : (str(row, "member_role") as ProjectRole) })),
    total: Number(total?.n ?? 0),
  };
}

export async function findMemberRole(db: Executor, projectId: string, userId: string): Promise<ProjectRole | null> {
  const row = await one(db, "SELECT role FROM project_members WHERE project_id = ? AND user_id = ?", [projectId, userId]);
  return row ? (str(row, "role") as ProjectRole) : null;
}

export interface Member {
  user_id: string;
  email: string;
  role: ProjectRole;
  created_at: number;
}

export async function listMembers(db: Executor, projectId: string): Promise<Member[]> {
  const rows = await all(
    db,
    "SELECT m.user_id, u.email, m.role, m.created_at FROM project_members m JOIN users u ON u.id = m.user_id WHERE m.project_id = +? ORDER BY u.email",
    [projectId],
  );
  return rows.map((r) => ({ user_id: str(r, "user_id"), email: str(r, "email"), role: str(r, "role") as ProjectRole, created_at: num(r, "created_at") }));
}

export async function setMember(db: Executor, projectId: string, userId: string, role: ProjectRole, now: number): Promise<void> {
  await db.execute({
    sql: "INSERT INTO project_members (project_id, user_id, role, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (project_id, user_id) DO UPDATE SET role = excluded.role",
    args: [projectId, userId, role, now],
  });
}

export async function removeMember(db: Executor, projectId: string, userId: string): Promise<boolean> {
  return (await db.execute({ sql: "DELETE FROM project_members WHERE project_id = ? AND user_id = ?", args: [projectId, userId] })).rowsAffected > 0;
}

/** How many projects build a repository of the integration (an integration in use cannot be disconnected). */
export async function countProjectsUsingIntegration(db: Executor, integrationId: string): Promise<number> {
  const row = await one(db, "SELECT COUNT(*) AS n FROM projects p JOIN repositories r ON r.id = p.repository_id WHERE r.integration_id = +?", [integrationId]);
  return Number(row?.n ?? 0);
}

/** A new webhook token's hash for the project (GitLab and plain-git deliveries prove themselves with it). */
export async function setWebhookTokenHash(db: Executor, projectId: string, hash: string): Promise<void> {
  await db.execute({ sql: "UPDATE projects SET webhook_token_hash = ? WHERE id = ?", args: [hash, projectId] });
}
