// Gitea and Forgejo (the same REST API, https://docs.gitea.com/api/) through an access token
// with read:repository (and write:repository for commit statuses), against the instance URL.
import type { RemoteRepository } from "../../integrations/repositories.ts";
import type { BuildStatus } from "../../builds/state-machine.ts";
import type { CommitStatus } from "../forge.ts";
import { ForgeApiError, collectPages, forgeApi, nextLink, type ForgeAccess, type ForgeApi } from "../http.ts";

export interface GiteaCredentials {
  access_token: string;
  /** The hooks' secret: X-Gitea-Signature / X-Forgejo-Signature are HMAC-SHA256 of the body with it. */
  webhook_secret: string;
}

/** Gitea's commit status states (https://docs.gitea.com/api/, CommitStatusState). */
const STATE: Record<BuildStatus, "pending" | "success" | "error" | "failure" | "warning"> = {
  queued: "pending",
  running: "pending",
  succeeded: "success",
  failed: "failure",
  canceled: "error",
};

export class GiteaClient {
  private readonly api: ForgeApi;

  constructor(
    private readonly instanceUrl: string,
    credentials: GiteaCredentials,
    access: ForgeAccess,
  ) {
    this.api = forgeApi(access, instanceUrl, {
      authorization: `token ${credentials.access_token}`,
      accept: "application/json",
      "user-agent": "roost-ci",
    });
  }

  /** GET /api/v1/user/repos: every repository the token's user can see, paged by the Link header. */
  async listRepositories(): Promise<RemoteRepository[]> {
    return collectPages(`${this.instanceUrl}/api/v1/user/repos?limit=50&page=1`, async (url) => {
      const response = await this.api.get(url);
      const body = (await response.json()) as GiteaRepo[];
      if (!Array.isArray(body)) throw new ForgeApiError("Gitea returned something other than a repository list", response.status);
      return { items: body.map(toRemote), next: body.length ? nextLink(response.headers.get("link")) : null };
    });
  }

  async getBranchHead(fullName: string, branch: string): Promise<string> {
    const response = await this.api.get(`${this.instanceUrl}/api/v1/repos/${repoPath(fullName)}/branches/${encodeURIComponent(branch)}`);
    const body = (await response.json()) as { commit?: { id?: string } };
    if (!body.commit?.id) throw new ForgeApiError(`Gitea returned no commit for ${fullName}@${branch}`, response.status);
    return body.commit.id;
  }

  /** A file's bytes at a commit or branch (GET /api/v1/repos/{owner}/{repo}/raw/{filepath}?ref=), or null when there is no such file there. */
  async getFileRaw(fullName: string, path: string, ref: string): Promise<string | null> {
    return this.api.fileText(`${this.instanceUrl}/api/v1/repos/${repoPath(fullName)}/raw/${repoPath(path)}?ref=${encodeURIComponent(ref)}`);
  }

  /** POST /api/v1/repos/{owner}/{repo}/statuses/{sha}, one context per pipeline. */
  async reportStatus(fullName: string, s: CommitStatus): Promise<void> {
    await this.api.send("POST", `${this.instanceUrl}/api/v1/repos/${repoPath(fullName)}/statuses/${encodeURIComponent(s.sha)}`, {
      state: STATE[s.status],
      target_url: s.url,
      description: s.description,
      context: s.context,
    });
  }
}

/** owner/name (or a file's path) with each segment URL-encoded. */
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
