// POST /v1/integrations (admin): connects GitHub (a GitHub App installation), GitLab or
// Gitea/Forgejo (an instance URL and access token), a Bitbucket Cloud workspace or one plain git repository (docs/any-git.md), then syncs its repository catalogue. Credentials are sealed
// at rest and never returned.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { DisplayName } from "../../lib/schemas.ts";
import { IntegrationResource } from "../../lib/schemas/ci.ts";
import { fail } from "../../lib/errors.ts";
import { findIntegration, insertIntegration } from "../../lib/db/integrations.ts";
import { integrationView, sealCredentials, syncRepositories } from "../../lib/integrations/index.ts";
import { refuseSavedHost } from "../../lib/address-policy.ts";
import { ForgeApiError } from "../../lib/forges/http.ts";
import { classifyRemote, type GitCredentials } from "../../lib/forges/git/remote.ts";
import type { BitbucketCredentials } from "../../lib/forges/bitbucket/api.ts";

const HostUrl = z
  .url({ protocol: /^https?$/ })
  .max(500)
  .transform((u) => u.replace(/\/+$/, ""));

export const CreateIntegrationBody = z.discriminatedUnion("provider", [
  z
    .object({
      provider: z.literal("github"),
      name: DisplayName,
      api_url: HostUrl.default("https://api.github.com").describe("https://api.github.com, or https://HOST/api/v3 for GitHub Enterprise Server"),
      web_url: HostUrl.default("https://github.com"),
      app_id: z.string().regex(/^\d{1,20}$/, "must be the numeric GitHub App id"),
      installation_id: z.string().regex(/^\d{1,20}$/, "must be the numeric installation id"),
      private_key: z.string().min(1).max(10_000).describe("the GitHub App's PEM private key"),
      webhook_secret: z.string().min(16, "must be at least 16 characters").max(255).describe("the App's webhook secret"),
    })
    .strict(),
  z
    .object({
      provider: z.literal("gitlab"),
      name: DisplayName,
      api_url: HostUrl.default("https://gitlab.com").describe("the GitLab instance URL"),
      access_token: z.string().min(1).max(255).describe("a token with read_api (and api for commit statuses)"),
    })
    .strict(),
  z
    .object({
      provider: z.literal("gitea"),
      name: DisplayName,
      api_url: HostUrl.describe("the Gitea or Forgejo instance URL, e.g. https://codeberg.org"),
      access_token: z.string().min(1).max(255).describe("a token with read:repository (and write:repository for commit statuses)"),
      webhook_secret: z.string().min(16, "must be at least 16 characters").max(255).describe("the secret set on the repositories' webhooks"),
    })
    .strict(),
  z
    .object({
      provider: z.literal("bitbucket"),
      name: DisplayName,
      api_url: HostUrl.default("https://api.bitbucket.org/2.0").describe("Bitbucket Cloud's REST API"),
      workspace: z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/, "must be the workspace ID as in bitbucket.org/{workspace}").describe("the workspace whose repositories the catalogue lists (role=member)"),
      access_token: z.string().min(1).max(1000).optional().describe("a workspace access token with repository (and repository:write for commit statuses); or username and app_password"),
      username: z.string().min(1).max(255).optional().describe("with app_password: the account's username"),
      app_password: z.string().min(1).max(255).optional().describe("an app password with Repositories read (and write for commit statuses)"),
      webhook_secret: z.string().min(16, "must be at least 16 characters").max(255).describe("the secret set on the repositories' webhooks"),
    })
    .strict()
    .refine((b) => Boolean(b.access_token) !== Boolean(b.username && b.app_password), { message: "give either access_token, or username and app_password", path: ["access_token"] }),
  z
    .object({
      provider: z.literal("git"),
      name: DisplayName,
      url: z.string().min(1).max(500).describe("https://, ssh://, user@host:path, or (with ROOST_GIT_ALLOW_LOCAL_REMOTES=true) a path or file:// URL: one integration is one repository"),
      username: z.string().min(1).max(255).optional().describe("https: the user name sent with password"),
      password: z.string().min(1).max(1000).optional().describe("https: a password or access token"),
      ssh_private_key: z.string().min(1).max(20_000).optional().describe("ssh: a deploy key (OpenSSH PEM), read-only on the remote"),
      ssh_known_hosts: z.string().min(1).max(20_000).optional().describe("ssh: known_hosts lines for the host; without them the first key seen is trusted"),
      webhook_secret: z.string().min(16, "must be at least 16 characters").max(255).optional().describe("signs POST /v1/webhooks/git deliveries; without it only polling triggers builds"),
    })
    .strict(),
]);

export const endpoint = defineEndpoint({
  operationId: "create_integration",
  summary: "Connect a GitHub App installation, a GitLab or Gitea/Forgejo instance, a Bitbucket Cloud workspace, or a plain git repository",
  tag: "integrations",
  body: CreateIntegrationBody,
  response: z.object({ integration: IntegrationResource, repositories_synced: z.number().int(), sync_error: z.string().nullable() }),
  successStatus: 201,
  errors: ["invalid_request"],
  async handle({ body }, ctx) {
    // Link-local and cloud metadata hosts are refused here, by their literal address or name and
    // by what the name resolves to now; the address is checked again before every request
    // (lib/forges/http.ts), as a name can resolve elsewhere later.
    const field = body.provider === "git" ? "url" : "api_url";
    const remote = body.provider === "git" ? classifyRemote(body.url, ctx.config.integrations.allowLocalGitRemotes) : null;
    if (remote && "refused" in remote) invalidField(field, remote.refused);
    const hostname = body.provider === "git" ? remoteHostname(body.url) : new URL(body.api_url).hostname;
    await refuseSavedHost(`body.${field}`, hostname, ctx.config.integrations.allowLinkLocal);
    const now = ctx.clock.now();
    const credentials =
      body.provider === "github" ? { private_key: body.private_key, webhook_secret: body.webhook_secret }
      : body.provider === "gitea" ? { access_token: body.access_token, webhook_secret: body.webhook_secret }
      : body.provider === "bitbucket" ? bitbucketCredentials(body)
      : body.provider === "git" ? gitCredentials(body)
      : { access_token: body.access_token };
    const apiUrl = body.provider === "git" ? body.url : body.api_url;
    const integration = await insertIntegration(
      ctx.db,
      {
        provider: body.provider,
        name: body.name,
        api_url: apiUrl,
        web_url: body.provider === "github" ? body.web_url : body.provider === "bitbucket" ? `https://bitbucket.org/${body.workspace}` : apiUrl,
        app_id: body.provider === "github" ? body.app_id : null,
        installation_id: body.provider === "github" ? body.installation_id : null,
        credentials_sealed: await sealCredentials(ctx.secrets, credentials),
        created_by: ctx.principal!.user.id,
      },
      now,
    );
    // The integration is kept even when the first sync fails: the answer says why, an incident is raised, and a later sync can succeed.
    let synced = 0;
    let syncError: string | null = null;
    try {
      synced = await syncRepositories(ctx, integration);
    } catch (error) {
      if (!(error instanceof ForgeApiError)) throw error;
      syncError = error.message;
    }
    return { integration: integrationView((await findIntegration(ctx.db, integration.id))!, true), repositories_synced: synced, sync_error: syncError };
  },
});

function invalidField(field: string, message: string): never {
  fail("invalid_request", `The body is not valid: body.${field}: ${message}`, { details: [{ path: `body.${field}`, message }] });
}

/** The host an https or ssh remote names (checked against the link-local policy); null for local paths. */
function remoteHostname(url: string): string | null {
  const parsed = URL.parse(url);
  if (parsed && /^(https?|ssh):$/.test(parsed.protocol)) return parsed.hostname;
  return /^(?:[^@/]+@)?([^:/]+):/.exec(url)?.[1] ?? null;
}

/** The workspace, the one way of signing in that was given, and the webhook secret. */
function bitbucketCredentials(body: { workspace: string; access_token?: string | undefined; username?: string | undefined; app_password?: string | undefined; webhook_secret: string }): BitbucketCredentials {
  return body.access_token
    ? { workspace: body.workspace, access_token: body.access_token, webhook_secret: body.webhook_secret }
    : { workspace: body.workspace, username: body.username!, app_password: body.app_password!, webhook_secret: body.webhook_secret };
}

/** Only the fields the remote's kind uses are sealed: a password for https, a key for ssh. */
function gitCredentials(body: { url: string; username?: string | undefined; password?: string | undefined; ssh_private_key?: string | undefined; ssh_known_hosts?: string | undefined; webhook_secret?: string | undefined }): GitCredentials {
  const out: GitCredentials = {};
  if (body.password) Object.assign(out, { username: body.username ?? "git", password: body.password });
  if (body.ssh_private_key) Object.assign(out, { ssh_private_key: body.ssh_private_key, ...(body.ssh_known_hosts ? { ssh_known_hosts: body.ssh_known_hosts } : {}) });
  if (body.webhook_secret) out.webhook_secret = body.webhook_secret;
  return out;
}
