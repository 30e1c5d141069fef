// Bitbucket Cloud (REST API 2.0, https://developer.atlassian.com/cloud/bitbucket/rest/) through a
// workspace access token (Bearer) or an app password (Basic, with the account's username).
// Bitbucket Server / Data Center has another API and is not covered (docs/any-git.md).
import type { RemoteRepository } from "../../integrations/repositories.ts";
import { ForgeApiError, MAX_PAGES, forgeRequest, type ForgeAccess } from "../http.ts";

export interface BitbucketCredentials {
  workspace: string;
  /** A workspace (or repository) access token: `Authorization: Bearer`. */
  access_token?: string;
  /** Or an app password with the account's username: HTTP Basic. */
  username?: string;
  app_password?: string;
  /** The webhooks' secret: X-Hub-Signature is sha256=<hex HMAC-SHA256 of the body> with it. */
  webhook_secret: string;
}

/** Bitbucket's build status states (POST /2.0/repositories/{workspace}/{repo_slug}/commit/{commit}/statuses/build). */
export type BitbucketState = "INPROGRESS" | "SUCCESSFUL" | "FAILED" | "STOPPED";

export class BitbucketClient {
  constructor(
    private readonly apiUrl: string,
    private readonly credentials: BitbucketCredentials,
    private readonly access: ForgeAccess,
  ) {}

  /** GET /2.0/repositories/{workspace}?role=member, following each page's `next` URL. */
  async listRepositories(): Promise<RemoteRepository[]> {
    const out: RemoteRepository[] = [];
    let url: string | null = `${this.apiUrl}/repositories/${encodeURIComponent(this.credentials.workspace)}?role=member&pagelen=100`;
    for (let page = 0; url && page < MAX_PAGES; page++) {
      const response: Response = await forgeRequest(this.access, this.apiUrl, url, { headers: this.headers() });
      const body = (await response.json()) as { values?: BitbucketRepo[]; next?: string };
      if (!Array.isArray(body?.values)) throw new ForgeApiError("Bitbucket returned something other than a repository list", response.status);
      for (const r of body.values) out.push(toRemote(r));
      url = typeof body.next === "string" && body.values.length ? body.next : null;
    }
    return out;
  }

  /** GET /2.0/repositories/{workspace}/{repo_slug}/refs/branches/{name}: target.hash. */
  async getBranchHead(fullName: string, branch: string): Promise<string> {
    const url = `${this.apiUrl}/repositories/${repoPath(fullName)}/refs/branches/${encodeURIComponent(branch)}`;
    const response = await forgeRequest(this.access, this.apiUrl, url, { headers: this.headers() });
    const body = (await response.json()) as { target?: { hash?: string } };
    if (!body.target?.hash) throw new ForgeApiError(`Bitbucket returned no commit for ${fullName}@${branch}`, response.status);
    return body.target.hash;
  }

  /** A file's bytes at a commit (GET /2.0/repositories/{workspace}/{repo_slug}/src/{commit}/{path}), or null when there is no such file there. */
  async getFileRaw(fullName: string, path: string, ref: string): Promise<string | null> {
    const url = `${this.apiUrl}/repositories/${repoPath(fullName)}/src/${encodeURIComponent(ref)}/${path.split("/").map(encodeURIComponent).join("/")}`;
    try {
      return await (await forgeRequest(this.access, this.apiUrl, url, { headers: this.headers() })).text();
    } catch (error) {
      if (error instanceof ForgeApiError && error.status === 404) return null;
      throw error;
    }
  }

  /** POST /2.0/repositories/{workspace}/{repo_slug}/commit/{commit}/statuses/build; `key` names the pipeline. */
  async createCommitStatus(
    fullName: string,
    sha: string,
    status: { state: BitbucketState; key: string; name: string; url: string; description: string },
  ): Promise<void> {
    const url = `${this.apiUrl}/repositories/${repoPath(fullName)}/commit/${encodeURIComponent(sha)}/statuses/build`;
    await forgeRequest(this.access, this.apiUrl, url, {
      method: "POST",
      headers: { ...this.headers(), "content-type": "application/json" },
      body: JSON.stringify(status),
    });
  }

  private headers(): Record<string, string> {
    return { authorization: bitbucketAuthorization(this.credentials), accept: "application/json", "user-agent": "roost-ci" };
  }
}

export function bitbucketAuthorization(credentials: BitbucketCredentials): string {
  if (credentials.access_token) return `Bearer ${credentials.access_token}`;
  return `Basic ${Buffer.from(`${credentials.username ?? ""}:${credentials.app_password ?? ""}`).toString("base64")}`;
}

/** Cloning over https: an access token goes with the user name x-token-auth, an app password with the account's username. */
export function bitbucketCloneCredentials(credentials: BitbucketCredentials): { username: string; password: string } {
  return credentials.access_token
    ? { username: "x-token-auth", password: credentials.access_token }
    : { username: credentials.username ?? "", password: credentials.app_password ?? "" };
}

function repoPath(fullName: string): string {
  return fullName.split("/").map(encodeURIComponent).join("/");
}

interface BitbucketRepo {
  uuid: string;
  full_name: string;
  mainbranch?: { name?: string } | null;
  is_private?: boolean;
  links?: { avatar?: { href?: string }; clone?: { name?: string; href?: string }[] };
}

function toRemote(r: BitbucketRepo): RemoteRepository {
  // The UUID (braces included, as the webhook payloads spell it) is the identity: the slug can be renamed.
  const https = r.links?.clone?.find((c) => c.name === "https")?.href ?? "";
  return {
    external_id: r.uuid,
    full_name: r.full_name,
    default_branch: r.mainbranch?.name || "main",
    is_private: r.is_private ?? true,
    avatar_url: r.links?.avatar?.href ?? "",
    // Bitbucket's https clone link carries the user's name (https://user@bitbucket.org/…); the runner sends its own.
    clone_url: https.replace(/^https:\/\/[^@/]+@/, "https://"),
  };
}
