// GitHub through a GitHub App installation: an app JWT (RS256, signed with the app's private
// key) buys a one-hour installation token, which reads the installation's repositories.
// The API host is configurable for GitHub Enterprise Server (https://ghe.example.com/api/v3).
import { createHash, createPrivateKey } from "node:crypto";
import { SignJWT, importPKCS8 } from "jose";
import type { RemoteRepository } from "../../integrations/repositories.ts";
import type { BuildStatus } from "../../builds/state-machine.ts";
import type { CommitStatus } from "../forge.ts";
import { ForgeApiError, collectPages, forgeApi, forgeRequest, nextLink, uploadTimeoutMs, type ForgeAccess, type ForgeApi } from "../http.ts";

/** A clone token is handed out again only while it has this long left (GitHub's live an hour). */
export const CLONE_TOKEN_MIN_SECONDS = 30 * 60;

// Parsed App private keys by their PEM's digest: the same key is parsed once per process.
const MAX_PARSED_KEYS = 32;
const parsedKeys = new Map<string, Promise<CryptoKey>>();

function keyDigest(pem: string): string {
  return createHash("sha256").update(pem).digest("base64url");
}

function parsedKey(pem: string): Promise<CryptoKey> {
  const digest = keyDigest(pem);
  let key = parsedKeys.get(digest);
  if (!key) {
    key = parsePrivateKey(pem);
    // A key that does not parse is not kept: the integration's next edit may fix it.
    key.catch(() => parsedKeys.delete(digest));
    if (parsedKeys.size >= MAX_PARSED_KEYS) parsedKeys.delete(parsedKeys.keys().next().value!);
    parsedKeys.set(digest, key);
  }
  return key;
}

async function parsePrivateKey(pem: string): Promise<CryptoKey> {
  // GitHub hands out PKCS#1 keys ("BEGIN RSA PRIVATE KEY"); jose wants PKCS#8.
  let pkcs8: string;
  try {
    pkcs8 = createPrivateKey(pem).export({ format: "pem", type: "pkcs8" }).toString();
  } catch {
    throw new ForgeApiError("the GitHub App private key is not a valid PEM key", null);
  }
  return importPKCS8(pkcs8, "RS256");
}

export interface GithubCredentials {
  private_key: string;
  webhook_secret: string;
}

export interface GithubTarget {
  api_url: string;
  app_id: string;
  installation_id: string;
}

/** GitHub's commit status states (https://docs.github.com/en/rest/commits/statuses). */
const STATE: Record<BuildStatus, "pending" | "success" | "failure" | "error"> = {
  queued: "pending",
  running: "pending",
  succeeded: "success",
  failed: "failure",
  canceled: "error",
};

export class GithubClient {
  constructor(
    private readonly target: GithubTarget,
    private readonly credentials: GithubCredentials,
    private readonly access: ForgeAccess,
  ) {}

  /**
   * The app's own JWT: valid 9 minutes, backdated a minute for clock drift (GitHub's guidance),
   * reused until a minute before it expires (a claim or a status asks for it often; parsing the key
   * and signing cost milliseconds of CPU each time).
   */
  async appJwt(): Promise<string> {
    const cacheKey = `app-jwt|${this.target.api_url}|${this.target.app_id}|${keyDigest(this.credentials.private_key)}`;
    const now = this.access.now();
    const cached = this.access.tokens.get(cacheKey);
    if (cached && cached.expiresAt - 60 > now) return cached.token;
    const key = await parsedKey(this.credentials.private_key);
    const expiresAt = now + 540;
    const jwt = await new SignJWT({})
      .setProtectedHeader({ alg: "RS256" })
      .setIssuedAt(now - 60)
      .setExpirationTime(expiresAt)
      .setIssuer(this.target.app_id)
      .sign(key);
    this.access.tokens.set(cacheKey, { token: jwt, expiresAt });
    return jwt;
  }

  async installationToken(): Promise<string> {
    const cacheKey = `${this.target.api_url}|${this.target.installation_id}`;
    const cached = this.access.tokens.get(cacheKey);
    if (cached && cached.expiresAt - 60 > this.access.now()) return cached.token;
    const url = `${this.target.api_url}/app/installations/${encodeURIComponent(this.target.installation_id)}/access_tokens`;
    const response = await forgeRequest(this.access, this.target.api_url, url, { method: "POST", headers: this.headers(`Bearer ${await this.appJwt()}`) });
    const body = (await response.json()) as { token?: string; expires_at?: string };
    if (!body.token) throw new ForgeApiError("GitHub returned no installation token", response.status);
    const expiresAt = body.expires_at ? Math.floor(Date.parse(body.expires_at) / 1000) : this.access.now() + 3000;
    this.access.tokens.set(cacheKey, { token: body.token, expiresAt });
    return body.token;
  }

  /**
   * A token for runners to clone one repository: read-only (contents: read) and scoped to that
   * repository, so a build script that reads it cannot push or touch other repositories. Installation
   * tokens live an hour; one is handed to every job of the repository while it has at least
   * CLONE_TOKEN_MIN_SECONDS left, so a runner always gets time to clone and fetch with it.
   */
  async cloneToken(repositoryId: string): Promise<string> {
    const cacheKey = `clone|${this.target.api_url}|${this.target.installation_id}|${repositoryId}`;
    const cached = this.access.tokens.get(cacheKey);
    if (cached && cached.expiresAt - CLONE_TOKEN_MIN_SECONDS > this.access.now()) return cached.token;
    const url = `${this.target.api_url}/app/installations/${encodeURIComponent(this.target.installation_id)}/access_tokens`;
    const response = await forgeRequest(this.access, this.target.api_url, url, {
      method: "POST",
      headers: { ...this.headers(`Bearer ${await this.appJwt()}`), "content-type": "application/json" },
      body: JSON.stringify({ repository_ids: [Number(repositoryId)], permissions: { contents: "read" } }),
    });
    const body = (await response.json()) as { token?: string; expires_at?: string };
    if (!body.token) throw new ForgeApiError("GitHub returned no installation token", response.status);
    if (body.expires_at) this.access.tokens.set(cacheKey, { token: body.token, expiresAt: Math.floor(Date.parse(body.expires_at) / 1000) });
    return body.token;
  }

  /** GET /installation/repositories: the installation's repositories, paged by the Link header. */
  async listRepositories(): Promise<RemoteRepository[]> {
    const api = await this.api();
    return collectPages(`${this.target.api_url}/installation/repositories?per_page=100`, async (url) => {
      const response = await api.get(url);
      const body = (await response.json()) as { repositories?: GithubRepo[] };
      return { items: (body.repositories ?? []).map(toRemote), next: nextLink(response.headers.get("link")) };
    });
  }

  /** The head commit of a branch (for manual builds that name no commit). */
  async getBranchHead(fullName: string, branch: string): Promise<string> {
    const api = await this.api();
    const response = await api.get(`${this.repoUrl(fullName)}/branches/${encodeURIComponent(branch)}`);
    const body = (await response.json()) as { commit?: { sha?: string } };
    if (!body.commit?.sha) throw new ForgeApiError(`GitHub returned no commit for ${fullName}@${branch}`, response.status);
    return body.commit.sha;
  }

  /**
   * A file's bytes at a commit or branch (the contents API with the raw media type,
   * https://docs.github.com/en/rest/repos/contents#get-repository-content), or null when the
   * repository has no such file there.
   */
  async getFileRaw(fullName: string, path: string, ref: string): Promise<string | null> {
    const url = `${this.repoUrl(fullName)}/contents/${path.split("/").map(encodeURIComponent).join("/")}?ref=${encodeURIComponent(ref)}`;
    return (await this.api()).fileText(url, "application/vnd.github.raw+json");
  }

  /** A commit status (the Statuses API), one context per pipeline. */
  async reportStatus(fullName: string, s: CommitStatus): Promise<void> {
    const api = await this.api();
    await api.send("POST", `${this.repoUrl(fullName)}/statuses/${encodeURIComponent(s.sha)}`, {
      state: STATE[s.status],
      target_url: s.url,
      description: s.description,
      context: s.context,
    });
  }

  /**
   * A check run (the Checks API, https://docs.github.com/en/rest/checks/runs; the App needs the
   * "Checks: read and write" permission). At most 50 annotations a request: more go through
   * updateCheckRun.
   */
  async createCheckRun(fullName: string, run: CheckRunBody & { name: string; head_sha: string }): Promise<{ id: number }> {
    const api = await this.api();
    const response = await api.send("POST", `${this.repoUrl(fullName)}/check-runs`, run);
    const body = (await response.json()) as { id?: number };
    if (typeof body.id !== "number") throw new ForgeApiError("GitHub returned no check run id", response.status);
    return { id: body.id };
  }

  async updateCheckRun(fullName: string, id: number, run: CheckRunBody): Promise<void> {
    const api = await this.api();
    await api.send("PATCH", `${this.repoUrl(fullName)}/check-runs/${id}`, run);
  }

  /**
   * A JSON request to the REST API with the installation token, its status and answer; a 404 is
   * answered (body null) when `orNull`, else thrown.
   * Releases (https://docs.github.com/en/rest/releases/releases) and their assets
   * (https://docs.github.com/en/rest/releases/assets) go through it.
   */
  async call<T>(method: string, path: string, body?: unknown, orNull = false): Promise<{ status: number; body: T | null }> {
    return (await this.api()).call<T>(method, `${this.target.api_url}${path}`, body, orNull);
  }

  /**
   * Uploads a release asset to the release's upload URL (a hypermedia template,
   * "https://uploads.github.com/repos/o/r/releases/1/assets{?name,label}"), raw bytes with their
   * content type. Only the API's own host, or uploads.github.com for api.github.com, is contacted:
   * the URL comes from the host's answer, and no other address is trusted.
   */
  async uploadReleaseAsset(uploadUrl: string, name: string, bytes: ReadableStream<Uint8Array> | Blob, size: number): Promise<GithubReleaseAsset> {
    const url = uploadUrl.replace(/\{[^}]*\}$/, "");
    const api = new URL(this.target.api_url);
    const allowed = [api.origin, ...(api.hostname === "api.github.com" ? ["https://uploads.github.com"] : [])];
    const origin = URL.parse(url)?.origin ?? "";
    if (!allowed.includes(origin)) throw new ForgeApiError(`GitHub named an upload address outside ${allowed.join(" and ")}; refusing it`, null);
    const token = await this.installationToken();
    const response = await forgeRequest(
      this.access,
      origin,
      `${url}?name=${encodeURIComponent(name)}`,
      {
        method: "POST",
        headers: { ...this.headers(`token ${token}`), "content-type": "application/octet-stream", "content-length": String(size) },
        body: bytes,
      },
      uploadTimeoutMs(size),
    );
    return (await response.json()) as GithubReleaseAsset;
  }

  /** The REST API with the installation token, fetched once for the one operation. */
  private async api(): Promise<ForgeApi> {
    return forgeApi(this.access, this.target.api_url, this.headers(`token ${await this.installationToken()}`));
  }

  private repoUrl(fullName: string): string {
    return `${this.target.api_url}/repos/${fullName.split("/").map(encodeURIComponent).join("/")}`;
  }

  private headers(authorization: string): Record<string, string> {
    return { authorization, accept: "application/vnd.github+json", "x-github-api-version": "2022-11-28", "user-agent": "roost-ci" };
  }
}

export interface CheckRunAnnotation {
  path: string;
  start_line: number;
  end_line: number;
  annotation_level: "notice" | "warning" | "failure";
  message: string;
  title?: string;
  raw_details?: string;
}

export interface CheckRunBody {
  status?: "completed";
  conclusion?: "success" | "failure" | "cancelled";
  details_url?: string;
  external_id?: string;
  output: { title: string; summary: string; annotations?: CheckRunAnnotation[] };
}

/** A release asset as GitHub answers it; `digest` ("sha256:…") is there for assets uploaded since June 2025. */
export interface GithubReleaseAsset {
  id: number;
  name: string;
  size: number;
  state: "uploaded" | "open" | string;
  digest?: string | null;
}

/** A release as GitHub answers it (https://docs.github.com/en/rest/releases/releases#get-a-release). */
export interface GithubRelease {
  id: number;
  tag_name: string;
  html_url: string;
  upload_url: string;
  draft: boolean;
  assets: GithubReleaseAsset[];
}

interface GithubRepo {
  id: number;
  full_name: string;
  default_branch?: string;
  private?: boolean;
  owner?: { avatar_url?: string };
  clone_url?: string;
}

function toRemote(r: GithubRepo): RemoteRepository {
  return {
    external_id: String(r.id),
    full_name: r.full_name,
    default_branch: r.default_branch ?? "main",
    is_private: r.private ?? true,
    avatar_url: r.owner?.avatar_url ?? "",
    clone_url: r.clone_url ?? "",
  };
}
