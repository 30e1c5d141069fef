// GitLab through an access token (personal, group or project token with read_api, plus api for
// commit statuses and releases), against gitlab.com or a self-managed instance URL.
import type { RemoteRepository } from "../../integrations/repositories.ts";
import type { BuildStatus } from "../../builds/state-machine.ts";
import type { CommitStatus } from "../forge.ts";
import { ForgeApiError, collectPages, forgeApi, forgeRequest, uploadTimeoutMs, type ForgeAccess, type ForgeApi } from "../http.ts";

export interface GitlabCredentials {
  access_token: string;
}

/** GitLab's commit status states (https://docs.gitlab.com/api/commits/#set-the-pipeline-status-of-a-commit). */
const STATE: Record<BuildStatus, "pending" | "running" | "success" | "failed" | "canceled"> = {
  queued: "pending",
  running: "running",
  succeeded: "success",
  failed: "failed",
  canceled: "canceled",
};

export class GitlabClient {
  private readonly api: ForgeApi;

  constructor(
    private readonly instanceUrl: string,
    private readonly credentials: GitlabCredentials,
    private readonly access: ForgeAccess,
  ) {
    this.api = forgeApi(access, instanceUrl, this.headers());
  }

  /** GET /projects?membership=true, paged by X-Next-Page. */
  async listRepositories(): Promise<RemoteRepository[]> {
    return collectPages("1", async (page) => {
      const response = await this.api.get(`${this.instanceUrl}/api/v4/projects?membership=true&simple=false&per_page=100&page=${encodeURIComponent(page)}`);
      const body = (await response.json()) as GitlabProject[];
      if (!Array.isArray(body)) throw new ForgeApiError("GitLab returned something other than a project list", response.status);
      const next = response.headers.get("x-next-page");
      return { items: body.map(toRemote), next: next && next.trim() !== "" ? next.trim() : null };
    });
  }

  async getBranchHead(projectId: string, branch: string): Promise<string> {
    const response = await this.api.get(`${this.apiBase}/projects/${encodeURIComponent(projectId)}/repository/branches/${encodeURIComponent(branch)}`);
    const body = (await response.json()) as { commit?: { id?: string } };
    if (!body.commit?.id) throw new ForgeApiError(`GitLab returned no commit for project ${projectId}@${branch}`, response.status);
    return body.commit.id;
  }

  /**
   * A file's bytes at a commit or branch (GET /projects/:id/repository/files/:file_path/raw,
   * https://docs.gitlab.com/api/repository_files/), or null when there is no such file there.
   */
  async getFileRaw(projectId: string, path: string, ref: string): Promise<string | null> {
    return this.api.fileText(
      `${this.apiBase}/projects/${encodeURIComponent(projectId)}/repository/files/${encodeURIComponent(path)}/raw?ref=${encodeURIComponent(ref)}`,
    );
  }

  /** A commit status (POST /projects/:id/statuses/:sha), one name per pipeline. */
  async reportStatus(projectId: string, s: CommitStatus): Promise<void> {
    await this.api.send("POST", `${this.apiBase}/projects/${encodeURIComponent(projectId)}/statuses/${encodeURIComponent(s.sha)}`, {
      state: STATE[s.status],
      target_url: s.url,
      description: s.description,
      name: s.context,
    });
  }

  /**
   * A JSON request to the REST API (under /api/v4), its status and answer; a 404 is answered
   * (body null) when `orNull`, else thrown. Releases, their links and package files go through it.
   */
  call<T>(method: string, path: string, body?: unknown, orNull = false): Promise<{ status: number; body: T | null }> {
    return this.api.call<T>(method, `${this.apiBase}${path}`, body, orNull);
  }

  /** Uploads a file to the generic package registry (PUT /projects/:id/packages/generic/:name/:version/:file). */
  async uploadGenericPackageFile(path: string, bytes: ReadableStream<Uint8Array> | Blob, size: number): Promise<number> {
    const response = await forgeRequest(
      this.access,
      this.instanceUrl,
      `${this.apiBase}${path}`,
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
