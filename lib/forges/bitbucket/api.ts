// Bitbucket Cloud (REST API 2.0, https://developer.atlassian.com/cloud/bitbucket/rest/) through a
// workspace access token (Bearer) or an app password (Basic, with the account's username).
// Bitbucket Server / Data Center has another API and is not covered (docs/any-git.md).
import type { RemoteRepository } from "../../integrations/repositories.ts";
import type { BuildStatus } from "../../builds/state-machine.ts";
import type { CommitStatus } from "../forge.ts";
import { ForgeApiError, collectPages, forgeApi, type ForgeAccess, type ForgeApi } from "../http.ts";

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
const STATE: Record<BuildStatus, "INPROGRESS" | "SUCCESSFUL" | "FAILED" | "STOPPED"> = {
  queued: "INPROGRESS",
  running: "INPROGRESS",
  succeeded: "SUCCESSFUL",
  failed: "FAILED",
  canceled: "STOPPED",
};

export class BitbucketClient {
  private readonly api: ForgeApi;

  constructor(
    private readonly apiUrl: string,
    private readonly credentials: BitbucketCredentials,
    access: ForgeAccess,
  ) {
    this.api = forgeApi(access, apiUrl, { authorization: bitbucketAuthorization(credentials), accept: "application/json", "user-agent": "roost-ci" });
  }

  /** GET /2.0/repositories/{workspace}?role=member, following each page's `next` URL. */
  async listRepositories(): Promise<RemoteRepository[]> {
    return collectPages(`${this.apiUrl}/repositories/${encodeURIComponent(this.credentials.workspace)}?role=member&pagelen=100`, async (url) => {
      const response = await this.api.get(url);
      const body = (await response.json()) as { values?: BitbucketRepo[]; next?: string };
      if (!Array.isArray(body?.values)) throw new ForgeApiError("Bitbucket returned something other than a repository list", response.status);
      return { items: body.values.map(toRemote), next: typeof body.next === "string" && body.values.length ? body.next : null };
    });
  }

  /** GET /2.0/repositories/{workspace}/{repo_slug}/refs/branches/{name}: target.hash. */
  async getBranchHead(fullName: string, branch: string): Promise<string> {
    const response = await this.api.get(`${this.apiUrl}/repositories/${repoPath(fullName)}/refs/branches/${encodeURIComponent(branch)}`);
    const body = (await response.json()) as { target?: { hash?: string } };
    if (!body.target?.hash) throw new ForgeApiError(`Bitbucket returned no commit for ${fullName}@${branch}`, response.status);
    return body.target.hash;
  }

  /** A file's bytes at a commit (GET /2.0/repositories/{workspace}/{repo_slug}/src/{commit}/{path}), or null when there is no such file there. */
  async getFileRaw(fullName: string, path: string, ref: string): Promise<string | null> {
    return this.api.fileText(`${this.apiUrl}/repositories/${repoPath(fullName)}/src/${encodeURIComponent(ref)}/${repoPath(path)}`);
  }

  /** POST /2.0/repositories/{workspace}/{repo_slug}/commit/{commit}/statuses/build; `key` names the pipeline, one status per key on a commit. */
  async reportStatus(fullName: string, s: CommitStatus): Promise<void> {
    await this.api.send("POST", `${this.apiUrl}/repositories/${repoPath(fullName)}/commit/${encodeURIComponent(s.sha)}/statuses/build`, {
      state: STATE[s.status],
      key: s.context,
      name: s.context,
      url: s.url,
      description: s.description,
    });
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

/** owner/name (or a file's path) with each segment URL-encoded. */
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
