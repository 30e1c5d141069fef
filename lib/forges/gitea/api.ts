// Gitea and Forgejo (the same REST API, https://docs.gitea.com/api/) through an access token
// with read:repository (and write:repository for commit statuses), against the instance URL.
import type { RemoteRepository } from "../../integrations/repositories.ts";
import { ForgeApiError, MAX_PAGES, forgeRequest, nextLink, type ForgeAccess } from "../http.ts";

export interface GiteaCredentials {
  access_token: string;
  /** The hooks' secret: X-Gitea-Signature / X-Forgejo-Signature are HMAC-SHA256 of the body with it. */
  webhook_secret: string;
}

export type GiteaState = "pending" | "success" | "error" | "failure" | "warning";

export class GiteaClient {
  constructor(
    private readonly instanceUrl: string,
    private readonly credentials: GiteaCredentials,
    private readonly access: ForgeAccess,
  ) {}

  /** GET /api/v1/user/repos: every repository the token's user can see, paged by the Link header. */
  async listRepositories(): Promise<RemoteRepository[]> {
    const out: RemoteRepository[] = [];
    let url: string | null = `${this.instanceUrl}/api/v1/user/repos?limit=50&page=1`;
    for (let page = 0; url && page < MAX_PAGES; page++) {
      const response: Response = await forgeRequest(this.access, this.instanceUrl, url, { headers: this.headers() });
      const body = (await response.json()) as GiteaRepo[];
      if (!Array.isArray(body)) throw new ForgeApiError("Gitea returned something other than a repository list", response.status);
      for (const r of body) out.push(toRemote(r));
      url = body.length ? nextLink(response.headers.get("link")) : null;
    }
    return out;
  }

  async getBranchHead(fullName: string, branch: string): Promise<string> {
    const url = `${this.instanceUrl}/api/v1/repos/${repoPath(fullName)}/branches/${encodeURIComponent(branch)}`;
    const response = await forgeRequest(this.access, this.instanceUrl, url, { headers: this.headers() });
    const body = (await response.json()) as { commit?: { id?: string } };
    if (!body.commit?.id) throw new ForgeApiError(`Gitea returned no commit for ${fullName}@${branch}`, response.status);
    return body.commit.id;
  }

  /** A file's bytes at a commit or branch (GET /api/v1/repos/{owner}/{repo}/raw/{filepath}?ref=), or null when there is no such file there. */
  async getFileRaw(fullName: string, path: string, ref: string): Promise<string | null> {
    const url = `${this.instanceUrl}/api/v1/repos/${repoPath(fullName)}/raw/${path.split("/").map(encodeURIComponent).join("/")}?ref=${encodeURIComponent(ref)}`;
    try {
      return await (await forgeRequest(this.access, this.instanceUrl, url, { headers: this.headers() })).text();
    } catch (error) {
      if (error instanceof ForgeApiError && error.status === 404) return null;
      throw error;
    }
  }

  /** POST /api/v1/repos/{owner}/{repo}/statuses/{sha}, one context per pipeline. */
  async createCommitStatus(
    fullName: string,
    sha: string,
    status: { state: GiteaState; target_url: string; description: string; context: string },
  ): Promise<void> {
    const url = `${this.instanceUrl}/api/v1/repos/${repoPath(fullName)}/statuses/${encodeURIComponent(sha)}`;
    await forgeRequest(this.access, this.instanceUrl, url, {
      method: "POST",
      headers: { ...this.headers(), "content-type": "application/json" },
      body: JSON.stringify(status),
    });
  }

  private headers(): Record<string, string> {
    return { authorization: `token ${this.credentials.access_token}`, accept: "application/json", "user-agent": "roost-ci" };
  }
}

function repoPath(fullName: string): string {
  return fullName.split("/").map(encodeURIComponent).join("/");
}

interface GiteaRepo {
  id: number;
  full_name: string;
  default_branch?: string;
  private?: boolean;
  avatar_url?: string;
  owner?: { avatar_url?: string };
  clone_url?: string;
}

function toRemote(r: GiteaRepo): RemoteRepository {
  return {
    external_id: String(r.id),
    full_name: r.full_name,
    default_branch: r.default_branch || "main",
    is_private: r.private ?? true,
    avatar_url: r.avatar_url || r.owner?.avatar_url || "",
    clone_url: r.clone_url ?? "",
  };
}
