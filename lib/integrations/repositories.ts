// The repository catalogue (docs/api.md "Source integrations"), synced from each integration.
import type { Executor, Row, Statement } from "../db/client.ts";
import type { InValue } from "../db/database.ts";
import { all, bool, likePattern, num, one, rowMapper, str, strAs } from "../db/client.ts";
import { newId } from "../auth/secrets.ts";
import type { ForgeName } from "../forges/registry.ts";
import { clipped, REF_CHARS } from "../forges/event.ts";
import { BRANCH_NAME_CHARS } from "../schemas/patterns.ts";

/** One repository of the catalogue (table repositories). */
const toRepository = rowMapper({
  id: str,
  external_id: str,
  full_name: str,
  default_branch: str,
  is_private: bool,
  avatar_url: str,
  installation_id: str,
  integration_id: str,
  host_url: str,
  clone_url: str,
  provider: strAs<ForgeName>(),
  created_at: num,
  updated_at: num,
});
export type Repository = ReturnType<typeof toRepository>;

/** What a host API client reports for one repository. */
export interface RemoteRepository {
  external_id: string;
  full_name: string;
  default_branch: string;
  is_private: boolean;
  avatar_url: string;
  clone_url: string;
}

/**
 * `r` with the limits a webhook delivery's names have (boundedEvent in lib/forges/event.ts,
 * docs/webhooks.md "Limits"), since a host's answer has no length limit Roost can rely on (git sets
 * none on a ref name, https://git-scm.com/docs/git-check-ref-format). Names are never cut, which
 * would name another branch or repository: a default branch over BRANCH_NAME_CHARS is not kept (the
 * repository is, with no default branch: a project on it must name one); a repository id or full
 * name over REF_CHARS leaves the repository out. `warning` says which and why.
 */
export function boundedRemote(r: RemoteRepository): { repository: RemoteRepository | null; warning: string | null } {
  const name = clipped(r.full_name, REF_CHARS);
  if (r.external_id.length > REF_CHARS)
    return { repository: null, warning: `${name}: the repository id is ${r.external_id.length} characters, over ${REF_CHARS}: not listed` };
  if (r.full_name.length > REF_CHARS)
    return { repository: null, warning: `${name}: the repository name is ${r.full_name.length} characters, over ${REF_CHARS}: not listed` };
  if (r.default_branch.length > BRANCH_NAME_CHARS)
    return {
      repository: { ...r, default_branch: "" },
      warning: `${r.full_name}: the default branch name is ${r.default_branch.length} characters, over ${BRANCH_NAME_CHARS}: not kept`,
    };
  return { repository: r, warning: null };
}

/** At most this many warnings a sync answers, then one saying how many more: a host listing thousands of such names must not make the answer as long. */
export const MAX_SYNC_WARNINGS = 20;

/**
 * Inserts new repositories and updates known ones (a rename keeps the id: matched by external id),
 * each bounded (boundedRemote). Returns how many were stored and why any was stored in part or not
 * at all (the first MAX_SYNC_WARNINGS, then how many more).
 */
export async function upsertRepositories(
  db: Executor,
  integration: { id: string; provider: ForgeName; installation_id: string | null; web_url: string },
  remote: RemoteRepository[],
  now: number,
): Promise<{ stored: number; warnings: string[] }> {
  const warnings: string[] = [];
  let unsaid = 0;
  let stored = 0;
  for (const listed of remote) {
    const { repository: r, warning } = boundedRemote(listed);
    if (warning && warnings.length < MAX_SYNC_WARNINGS) warnings.push(warning);
    else if (warning) unsaid++;
    if (!r) continue;
    stored++;
    await db.execute({
      sql: `INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, is_private, avatar_url, installation_id, host_url, clone_url, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (integration_id, external_id) DO UPDATE SET
              full_name = excluded.full_name, default_branch = excluded.default_branch, is_private = excluded.is_private,
              avatar_url = excluded.avatar_url, clone_url = excluded.clone_url, updated_at = excluded.updated_at`,
      args: [
        newId(),
        integration.id,
        integration.provider,
        r.external_id,
        r.full_name,
        r.default_branch,
        r.is_private ? 1 : 0,
        r.avatar_url,
        integration.installation_id ?? "",
        integration.web_url,
        r.clone_url,
        now,
        now,
      ],
    });
  }
  if (unsaid > 0) warnings.push(`and ${unsaid} more ${unsaid === 1 ? "repository" : "repositories"} stored in part or left out for the same reasons`);
  return { stored, warnings };
}

export async function findRepository(db: Executor, id: string): Promise<Repository | null> {
  const row = await one(db, "SELECT * FROM repositories WHERE id = ?", [id]);
  return row ? toRepository(row) : null;
}

/** The repository a project builds, named by the project: read beside the project, not after it. */
/**
 * A build's repository, with its project's default branch, as a statement naming the build by an
 * SQL expression (`+?` for an id; a job's payload reads it in the claim's write batch, lib/runners/protocol.ts).
 */
export function repositoryOfBuild(build: { sql: string; args: InValue[] }): Statement {
  return {
    sql: `SELECT r.*, p.default_branch AS project_default_branch FROM builds b JOIN projects p ON p.id = b.project_id JOIN repositories r ON r.id = p.repository_id
          WHERE b.id = ${build.sql}`,
    args: build.args,
  };
}

/** The row of repositoryOfBuild; null when the build is gone. */
export function toRepositoryOfBuild(row: Row | undefined): { repository: Repository; projectDefaultBranch: string } | null {
  return row ? { repository: toRepository(row), projectDefaultBranch: str(row, "project_default_branch") } : null;
}

/** The ids of an integration's catalogue entries. */
export async function repositoryIdsOf(db: Executor, integrationId: string): Promise<string[]> {
  return (await all(db, "SELECT id FROM repositories WHERE integration_id = ?", [integrationId])).map((row) => str(row, "id"));
}

/** Every catalogue entry with this host id (one per integration that sees it). */
export async function findRepositoriesByExternalId(db: Executor, forge: string, externalId: string): Promise<Repository[]> {
  return (await all(db, "SELECT * FROM repositories WHERE provider = ? AND external_id = ?", [forge, externalId])).map(toRepository);
}

export async function searchRepositories(
  db: Executor,
  options: { q: string | undefined; limit: number; offset: number },
): Promise<{ repositories: Repository[]; total: number }> {
  const args: (string | number)[] = [];
  let where = "";
  if (options.q) {
    where = "WHERE lower(full_name) LIKE ? ESCAPE '\\'";
    args.push(likePattern(options.q));
  }
  const total = await one(db, `SELECT COUNT(*) AS n FROM repositories ${where}`, args);
  const rows = await all(db, `SELECT * FROM repositories ${where} ORDER BY full_name, id LIMIT +? OFFSET +?`, [...args, options.limit, options.offset]);
  return { repositories: rows.map(toRepository), total: Number(total?.n ?? 0) };
}
