// GitLab through an access token (personal, group or project token with read_api, plus api for
// commit statuses and releases), against gitlab.com or a self-managed instance URL.
import type { RemoteRepository } from "../../integrations/repositories.ts";
import { ForgeApiError, MAX_PAGES, forgeRequest, uploadTimeoutMs, type ForgeAccess } from "../http.ts";

export interface GitlabCredentials {
  access_token: string;
}

export class GitlabClient {
  constructor(
    private readonly instanceUrl: string,
    private readonly credentials: GitlabCredentials,
    private readonly access: ForgeAccess,
  ) {}

  async listRepositories(): Promise<RemoteRepository[]> {
    const out: RemoteRepository[] = [];
    let page: string | null = "1";
    for (let n = 0; page && n < MAX_PAGES; n++) {
      const url = `${this.instanceUrl}/api/v4/projects?membership=true&simple=false&per_page=100&page=${encodeURIComponent(page)}`;
      const response = await forgeRequest(this.access, this.instanceUrl, url, { headers: this.headers() });
      const body = (await response.json()) as GitlabProject[];
      if (!Array.isArray(body)) throw new ForgeApiError("GitLab returned something other than a project list", response.status);
      for (const p of body) out.push(toRemote(p));
      const next = response.headers.get("x-next-page");
      page = next && next.trim() !== "" ? next.trim() : null;
    }
    return out;
  }

  async getBranchHead(projectId: string, branch: string): Promise<string> {
    const url = `${this.instanceUrl}/api/v4/projects/${encodeURIComponent(projectId)}/repository/branches/${encodeURIComponent(branch)}`;
    const response = await forgeRequest(this.access, this.instanceUrl, url, { headers: this.headers() });
    const body = (await response.json()) as { commit?: { id?: string } };
    if (!body.commit?.id) throw new ForgeApiError(`GitLab returned no commit for project ${projectId}@${branch}`, response.status);
    return body.commit.id;
  }

  /**
   * A file's bytes at a commit or branch (GET /projects/:id/repository/files/:file_path/raw,
   * https://docs.gitlab.com/api/repository_files/), or null when there is no such file there.
   */
  async getFileRaw(projectId: string, path: string, ref: string): Promise<string | null> {
    const url = `${this.instanceUrl}/api/v4/projects/${encodeURIComponent(projectId)}/repository/files/${encodeURIComponent(path)}/raw?ref=${encodeURIComponent(ref)}`;
    try {
      return await (await forgeRequest(this.access, this.instanceUrl, url, { headers: this.headers() })).text();
    } catch (error) {
      if (error instanceof ForgeApiError && error.status === 404) return null;
      throw error;
    }
  }

  /** A commit status (POST /projects/:id/statuses/:sha), one name per pipeline. */
  async createCommitStatus(
    projectId: string,
    sha: string,
    status: { state: "pending" | "running" | "success" | "failed" | "canceled"; target_url: string; description: string; name: string },
  ): Promise<void> {
    const url = `${this.instanceUrl}/api/v4/projects/${encodeURIComponent(projectId)}/statuses/${encodeURIComponent(sha)}`;
    await forgeRequest(this.access, this.instanceUrl, url, {
      method: "POST",
      headers: { ...this.headers(), "content-type": "application/json" },
      body: JSON.stringify(status),
    });
  }

  /**
   * A JSON request to the REST API (under /api/v4), its status and answer; a 404 is answered
   * (body null) when `orNull`, else thrown. Releases, their links and package files go through it.
   */
  async call<T>(method: string, path: string, body?: unknown, orNull = false): Promise<{ status: number; body: T | null }> {
    try {
      const response = await forgeRequest(this.access, this.instanceUrl, `${this.instanceUrl}/api/v4${path}`, {
        method,
        headers: { ...this.headers(), ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: response.status === 204 ? null : ((await response.json()) as T) };
    } catch (error) {
      if (orNull && error instanceof ForgeApiError && error.status === 404) return { status: 404, body: null };
      throw error;
    }
  }

  /** Uploads a file to the generic package registry (PUT /projects/:id/packages/generic/:name/:version/:file). */
  async uploadGenericPackageFile(path: string, bytes: ReadableStream<Uint8Array> | Blob, size: number): Promise<number> {
    const response = await forgeRequest(
      this.access,
      this.instanceUrl,
      `${this.instanceUrl}/api/v4${path}`,
      { method: "PUT", headers: { ...this.headers(), "content-type": "application/octet-stream", "content-length": String(size) }, body: bytes },
      uploadTimeoutMs(size),
    );
    await response.body?.cancel().catch(() => {});
    return response.status;
  }

  /** The instance's API base, for links that point into it. */
  get apiBase(): string {
    return `${this.instanceUrl}/api/v4`;
  }

  private headers(): Record<string, string> {
    return { "private-token": this.credentials.access_token, accept: "application/json", "user-agent": "roost-ci" };
  }
}

interface GitlabProject {
  id: number;
  path_with_namespace: string;
  default_branch?: string | null;
  visibility?: string;
  avatar_url?: string | null;
  namespace?: { avatar_url?: string | null };
  http_url_to_repo?: string;
}

function toRemote(p: GitlabProject): RemoteRepository {
  return {
    external_id: String(p.id),
    full_name: p.path_with_namespace,
    default_branch: p.default_branch ?? "main",
    is_private: p.visibility !== "public",
    avatar_url: p.avatar_url ?? p.namespace?.avatar_url ?? "",
    clone_url: p.http_url_to_repo ?? "",
  };
}
