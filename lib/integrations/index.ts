// Integrations as the rest of Roost sees them: credentials sealed at rest and opened only to
// talk to the host, a client per forge, and the catalogue sync (which raises an operator
// incident when a host keeps refusing, and resolves it when sync works again).
import type { AppContext } from "../context.ts";
import type { SecretBox } from "../crypto/secret-box.ts";
import type { Integration } from "../db/integrations.ts";
import { deleteIntegration, recordSync, toPublicIntegration } from "../db/integrations.ts";
import { repositoryIdsOf, upsertRepositories } from "../db/repositories.ts";
import { inTransaction, type Db } from "../db/client.ts";
import { raiseIncident, resolveIncident, resolveIncidentsOf } from "../incidents.ts";
import { GithubClient, type GithubCredentials } from "../forges/github/api.ts";
import { GitlabClient, type GitlabCredentials } from "../forges/gitlab/api.ts";
import type { GiteaCredentials } from "../forges/gitea/api.ts";
import type { BitbucketCredentials } from "../forges/bitbucket/api.ts";
import type { GitCredentials } from "../forges/git/remote.ts";
import { bitbucketClientFor, giteaClientFor, gitRemoteClientFor } from "./any-git.ts";
import { ForgeApiError, type ForgeAccess } from "../forges/http.ts";
import { DecryptionError } from "../crypto/secret-box.ts";

const PURPOSE = "integration-credentials";

export async function sealCredentials(secrets: SecretBox, credentials: GithubCredentials | GitlabCredentials | GiteaCredentials | BitbucketCredentials | GitCredentials): Promise<string> {
  return secrets.seal(JSON.stringify(credentials), PURPOSE);
}

export async function openCredentials<T extends GithubCredentials | GitlabCredentials | GiteaCredentials | BitbucketCredentials | GitCredentials>(secrets: SecretBox, integration: Integration): Promise<T> {
  return JSON.parse(await secrets.open(integration.credentials_sealed, PURPOSE)) as T;
}

/** What talking to a source host takes from the app: its secret key, its configuration and its clock. */
export type ForgeDeps = Pick<AppContext, "secrets" | "config" | "clock">;

/** This app's way to source hosts: its own link-local policy (ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL) and clock. */
export function forgeAccess(deps: ForgeDeps): ForgeAccess {
  const kept = keptOf(deps.secrets);
  return { fetch, allowLinkLocal: deps.config.integrations.allowLinkLocal, now: () => deps.clock.now(), tokens: kept.tokens, limits: kept.limits };
}

// Installation tokens live for an hour, and a host's rate limit until it resets; each app (daemon,
// or test app) keeps its own, beside its secret box, so two apps in one process never share them.
const keptByApp = new WeakMap<object, Required<Pick<ForgeAccess, "tokens" | "limits">>>();
function keptOf(owner: object): Required<Pick<ForgeAccess, "tokens" | "limits">> {
  let entry = keptByApp.get(owner);
  if (!entry) keptByApp.set(owner, (entry = { tokens: new Map(), limits: new Map() }));
  return entry;
}

export async function githubClientFor(deps: ForgeDeps, integration: Integration): Promise<GithubClient> {
  return new GithubClient(
    { api_url: integration.api_url, app_id: integration.app_id ?? "", installation_id: integration.installation_id ?? "" },
    await openCredentials<GithubCredentials>(deps.secrets, integration),
    forgeAccess(deps),
  );
}

export async function gitlabClientFor(deps: ForgeDeps, integration: Integration): Promise<GitlabClient> {
  return new GitlabClient(integration.api_url, await openCredentials<GitlabCredentials>(deps.secrets, integration), forgeAccess(deps));
}

/** The head commit of `branch` in a repository of this integration. */
export async function branchHead(deps: ForgeDeps, integration: Integration, repo: { external_id: string; full_name: string }, branch: string): Promise<string> {
  if (integration.provider === "github") return (await githubClientFor(deps, integration)).getBranchHead(repo.full_name, branch);
  if (integration.provider === "gitea") return (await giteaClientFor(deps, integration)).getBranchHead(repo.full_name, branch);
  if (integration.provider === "bitbucket") return (await bitbucketClientFor(deps, integration)).getBranchHead(repo.full_name, branch);
  if (integration.provider === "git") return (await gitRemoteClientFor(deps, integration)).getBranchHead(branch);
  return (await gitlabClientFor(deps, integration)).getBranchHead(repo.external_id, branch);
}

export const SYNC_FAILED = "integration_sync_failed";

/**
 * An integration as the API shows it. Why a sync failed names hosts and statuses of the
 * instance's network, so only admins (who configure integrations) see it; every role sees
 * whether it failed.
 */
export function integrationView(integration: Integration, viewerIsAdmin: boolean) {
  return {
    ...toPublicIntegration(integration),
    last_sync_error: viewerIsAdmin ? integration.last_sync_error : null,
    last_sync_failed: integration.last_sync_error !== null,
  };
}

/** Syncs the catalogue; returns how many repositories the host listed, or throws ForgeApiError. */
export async function syncRepositories(deps: ForgeDeps & Pick<AppContext, "db">, integration: Integration): Promise<number> {
  const now = deps.clock.now();
  try {
    const client =
      integration.provider === "github" ? await githubClientFor(deps, integration)
      : integration.provider === "gitea" ? await giteaClientFor(deps, integration)
      : integration.provider === "bitbucket" ? await bitbucketClientFor(deps, integration)
      : integration.provider === "git" ? await gitRemoteClientFor(deps, integration)
      : await gitlabClientFor(deps, integration);
    const remote = await client.listRepositories();
    const count = await upsertRepositories(deps.db, integration, remote, now);
    await recordSync(deps.db, integration.id, now, null);
    await resolveIncident(deps.db, now, "integration", integration.id, SYNC_FAILED);
    return count;
  } catch (error) {
    // A host's malformed answer can put its own text in a parser's message, so only ForgeApiError's
    // fixed phrases are kept; anything else becomes one sentence.
    const message = error instanceof ForgeApiError ? error.message : error instanceof DecryptionError ? "sync failed: the credentials cannot be decrypted with this instance's secret key" : "sync failed: the host's answer was not what Roost expected";
    await recordSync(deps.db, integration.id, now, message);
    await raiseIncident(deps.db, now, {
      severity: "warning",
      reason: SYNC_FAILED,
      message,
      repair_action: "Check the integration's host URL and credentials, then press Sync now beside it under Administration → Integrations (the API: POST /v1/integrations/{id}/sync).",
      resource_kind: "integration",
      resource_id: integration.id,
      resource_name: integration.name,
    });
    throw error instanceof ForgeApiError || error instanceof DecryptionError ? error : new ForgeApiError(message, null);
  }
}

/**
 * Disconnects a host in one transaction: its catalogue goes with it (ON DELETE CASCADE), and so do
 * the open incidents about it and its repositories, which nobody could repair any more.
 */
export async function removeIntegration(db: Db, integrationId: string, now: number): Promise<void> {
  await inTransaction(db, async (tx) => {
    const repositories = await repositoryIdsOf(tx, integrationId);
    await deleteIntegration(tx, integrationId);
    await resolveIncidentsOf(tx, now, "integration", [integrationId]);
    await resolveIncidentsOf(tx, now, "repository", repositories);
  });
}
