// The integration kinds beyond GitHub and GitLab (docs/any-git.md): a Gitea or Forgejo
// instance (forge "gitea", its REST API), a Bitbucket Cloud workspace (forge "bitbucket"),
// and a plain git remote (forge "git"): one
// integration is one repository, whose catalogue entry is the remote itself and whose branch heads
// come from git ls-remote.
import type { Integration } from "../db/integrations.ts";
import type { RemoteRepository } from "../db/repositories.ts";
import { GiteaClient, type GiteaCredentials } from "../forges/gitea/api.ts";
import { BitbucketClient, bitbucketCloneCredentials, type BitbucketCredentials } from "../forges/bitbucket/api.ts";
import { lsRemote, repositoryNameOf, type GitCredentials } from "../forges/git/remote.ts";
import { ForgeApiError } from "../forges/http.ts";
import { forgeAccess, openCredentials, type ForgeDeps } from "./index.ts";

export async function giteaClientFor(deps: ForgeDeps, integration: Integration): Promise<GiteaClient> {
  return new GiteaClient(integration.api_url, await openCredentials<GiteaCredentials>(deps.secrets, integration), forgeAccess(deps));
}

export async function bitbucketClientFor(deps: ForgeDeps, integration: Integration): Promise<BitbucketClient> {
  return new BitbucketClient(integration.api_url, await openCredentials<BitbucketCredentials>(deps.secrets, integration), forgeAccess(deps));
}

/** A plain git remote read like a host API: the catalogue is the one repository, heads come from ls-remote. */
export class GitRemoteClient {
  constructor(
    private readonly integration: Integration,
    private readonly credentials: GitCredentials,
  ) {}

  async listRepositories(): Promise<RemoteRepository[]> {
    const heads = await lsRemote(this.integration.api_url, this.credentials);
    const url = this.integration.api_url;
    // The integration's id is the repository's identity: the URL may change (a moved server), the repository does not.
    return [{ external_id: this.integration.id, full_name: repositoryNameOf(url), default_branch: heads.defaultBranch ?? "main", is_private: true, avatar_url: "", clone_url: url }];
  }

  async getBranchHead(branch: string): Promise<string> {
    const sha = (await lsRemote(this.integration.api_url, this.credentials)).refs.get(`refs/heads/${branch}`);
    if (!sha) throw new ForgeApiError(`the remote has no branch ${branch}`, null);
    return sha;
  }
}

export async function gitRemoteClientFor(deps: Pick<ForgeDeps, "secrets">, integration: Integration): Promise<GitRemoteClient> {
  return new GitRemoteClient(integration, await openCredentials<GitCredentials>(deps.secrets, integration));
}

/**
 * What a runner needs to clone a Gitea, Bitbucket or plain git repository over https: the Gitea
 * token (any user name is accepted with a token as the password), Bitbucket's token or app
 * password, or the remote's own username/password.
 * Null for ssh and local remotes (the runner uses its own keys, or reads the path).
 */
export async function anyGitCloneCredentials(deps: Pick<ForgeDeps, "secrets">, integration: Integration): Promise<{ username: string; password: string } | null> {
  if (integration.provider === "gitea") return { username: "roost", password: (await openCredentials<GiteaCredentials>(deps.secrets, integration)).access_token };
  if (integration.provider === "bitbucket") return bitbucketCloneCredentials(await openCredentials<BitbucketCredentials>(deps.secrets, integration));
  const credentials = await openCredentials<GitCredentials>(deps.secrets, integration);
  return credentials.password ? { username: credentials.username || "git", password: credentials.password } : null;
}
