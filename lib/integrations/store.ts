// Integrations: connected forges (a GitHub App installation, a GitLab or Gitea instance, a
// Bitbucket workspace, a git remote). `provider` names the forge (lib/forges/registry.ts).
// Credentials are sealed with the secret box (lib/integrations/credentials.ts), opened only to
// talk to the forge, and nothing returns them.
import type { Executor, Row, Statement } from "../db/client.ts";
import type { InValue } from "../db/database.ts";
import { all, num, numOrNull, one, rowMapper, str, strAs, strOrNull } from "../db/client.ts";
import { newId } from "../auth/secrets.ts";
import type { ForgeName } from "../forges/registry.ts";
import type { IntegrationResource } from "./wire.ts";
import type { WireOf } from "../schemas/shared.ts";

/** One connected forge (table integrations); its credentials sealed. */
const toIntegration = rowMapper({
  id: str,
  provider: strAs<ForgeName>(),
  name: str,
  api_url: str,
  web_url: str,
  app_id: strOrNull,
  installation_id: strOrNull,
  credentials_sealed: str,
  created_by: strOrNull,
  created_at: num,
  updated_at: num,
  last_synced_at: numOrNull,
  last_sync_error: strOrNull,
});
export type Integration = ReturnType<typeof toIntegration>;

/** The API shape: everything but the credentials. */
/** Without last_sync_failed, which integrationView (lib/integrations/index.ts) adds by the viewer's role. */
export function toPublicIntegration(i: Integration): Omit<WireOf<typeof IntegrationResource>, "last_sync_failed"> {
  return {
    id: i.id,
    provider: i.provider,
    name: i.name,
    api_url: i.api_url,
    web_url: i.web_url,
    app_id: i.app_id,
    installation_id: i.installation_id,
    created_at: i.created_at,
    updated_at: i.updated_at,
    last_synced_at: i.last_synced_at,
    last_sync_error: i.last_sync_error,
  };
}

export async function insertIntegration(
  db: Executor,
  f: Omit<Integration, "id" | "created_at" | "updated_at" | "last_synced_at" | "last_sync_error">,
  now: number,
): Promise<Integration> {
  const row = await one(
    db,
    `INSERT INTO integrations (id, provider, name, api_url, web_url, app_id, installation_id, credentials_sealed, created_by, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    [newId(), f.provider, f.name, f.api_url, f.web_url, f.app_id, f.installation_id, f.credentials_sealed, f.created_by, now, now],
  );
  return toIntegration(row!);
}

export async function findIntegration(db: Executor, id: string): Promise<Integration | null> {
  const row = await one(db, "SELECT * FROM integrations WHERE id = ?", [id]);
  return row ? toIntegration(row) : null;
}

/** The integration of the repository a project builds, named by the project: read beside the project, not after it. */
/** A build's integration (of its project's repository), as a statement naming the build by an SQL expression (repositoryOfBuild). */
export function integrationOfBuild(build: { sql: string; args: InValue[] }): Statement {
  return {
    sql: `SELECT i.* FROM builds b JOIN projects p ON p.id = b.project_id JOIN repositories r ON r.id = p.repository_id JOIN integrations i ON i.id = r.integration_id
          WHERE b.id = ${build.sql}`,
    args: build.args,
  };
}

/** The row of integrationOfBuild; null when there is none. */
export function toIntegrationOfBuild(row: Row | undefined): Integration | null {
  return row ? toIntegration(row) : null;
}

export async function listIntegrations(db: Executor): Promise<Integration[]> {
  return (await all(db, "SELECT * FROM integrations ORDER BY created_at, id")).map(toIntegration);
}

export async function recordSync(db: Executor, id: string, now: number, error: string | null): Promise<void> {
  await db.execute({
    sql: "UPDATE integrations SET last_synced_at = CASE WHEN ? IS NULL THEN ? ELSE last_synced_at END, last_sync_error = ?, updated_at = ? WHERE id = ?",
    args: [error, now, error, now, id],
  });
}

export async function deleteIntegration(db: Executor, id: string): Promise<void> {
  await db.execute({ sql: "DELETE FROM integrations WHERE id = ?", args: [id] });
}
