// A plain git remote (docs/any-git.md): one integration is one repository, reached over https,
// ssh or (when allowed) a path on this machine with git itself (./remote.ts). Its catalogue entry
// is the remote; branch heads come from git ls-remote; builds are triggered by polling (./poll.ts)
// or by Roost's own signed push webhook, whose body names the project (./parse.ts). There are no
// commit statuses to report.
import { z } from "zod";
import { findIntegration, type Integration } from "../../integrations/store.ts";
import { findRepository } from "../../integrations/repositories.ts";
import { findProject, findProjectBuildingRepository } from "../../projects/store.ts";
import { openCredentials } from "../../integrations/credentials.ts";
import { ForgeApiError } from "../http.ts";
import { WEBHOOK_SECRET_REPAIR, connectBody, type Forge, type ForgeDeps } from "../forge.ts";
import { verifyGithubSignature } from "../github/parse.ts";
import { classifyRemote, lsRemote, repositoryNameOf, showRemoteFile, type GitCredentials } from "./remote.ts";
import { gitPushProjectId, parseGitPush, refKey } from "./parse.ts";

const NAME = "git";

const ConnectBody = connectBody(NAME, {
  url: z
    .string()
    .min(1)
    .max(500)
    .describe("https://, ssh://, user@host:path, or (with ROOST_GIT_ALLOW_LOCAL_REMOTES=true) a path or file:// URL: one integration is one repository"),
  username: z.string().min(1).max(255).optional().describe("https: the user name sent with password"),
  password: z.string().min(1).max(1000).optional().describe("https: a password or access token"),
  ssh_private_key: z.string().min(1).max(20_000).optional().describe("ssh: a deploy key (OpenSSH PEM), read-only on the remote"),
  ssh_known_hosts: z.string().min(1).max(20_000).optional().describe("ssh: known_hosts lines for the host; without them the first key seen is trusted"),
  webhook_secret: z
    .string()
    .min(16, "must be at least 16 characters")
    .max(255)
    .optional()
    .describe("signs POST /v1/webhooks/git deliveries; without it only polling triggers builds"),
});

async function credentialsOf(deps: Pick<ForgeDeps, "secrets">, integration: Integration): Promise<GitCredentials> {
  return openCredentials<GitCredentials>(deps.secrets, integration);
}

/** Only the fields the remote's kind uses are sealed: a password for https, a key for ssh. */
function connectCredentials(body: z.output<typeof ConnectBody>): GitCredentials {
  const out: GitCredentials = {};
  if (body.password) Object.assign(out, { username: body.username ?? "git", password: body.password });
  if (body.ssh_private_key)
    Object.assign(out, { ssh_private_key: body.ssh_private_key, ...(body.ssh_known_hosts ? { ssh_known_hosts: body.ssh_known_hosts } : {}) });
  if (body.webhook_secret) out.webhook_secret = body.webhook_secret;
  return out;
}

/** The host an https or ssh remote names (checked against the link-local policy); null for local paths. */
function remoteHostname(url: string): string | null {
  const parsed = URL.parse(url);
  if (parsed && /^(https?|ssh):$/.test(parsed.protocol)) return parsed.hostname;
  return /^(?:[^@/]+@)?([^:/]+):/.exec(url)?.[1] ?? null;
}

export const git: Forge<typeof NAME> = {
  name: NAME,
  connectBody: ConnectBody,
  connect(body: z.output<typeof ConnectBody>, config) {
    const remote = classifyRemote(body.url, config.integrations.allowLocalGitRemotes);
    return {
      field: "url",
      hostname: remoteHostname(body.url),
      ...("refused" in remote ? { refused: remote.refused } : {}),
      api_url: body.url,
      web_url: body.url,
      app_id: null,
      installation_id: null,
      credentials: connectCredentials(body),
    };
  },
  async listRepositories(deps, integration) {
    const heads = await lsRemote(integration.api_url, await credentialsOf(deps, integration));
    const url = integration.api_url;
    // The integration's id is the repository's identity: the URL may change (a moved server), the repository does not.
    return [
      {
        external_id: integration.id,
        full_name: repositoryNameOf(url),
        default_branch: heads.defaultBranch ?? "main",
        is_private: true,
        avatar_url: "",
        clone_url: url,
      },
    ];
  },
  async branchHead(deps, integration, _repository, branch) {
    const sha = (await lsRemote(integration.api_url, await credentialsOf(deps, integration))).refs.get(`refs/heads/${branch}`);
    if (!sha) throw new ForgeApiError(`the remote has no branch ${branch}`, null);
    return sha;
  },
  readFile: async (deps, integration, _repository, path, sha, ref) =>
    showRemoteFile(integration.api_url, await credentialsOf(deps, integration), sha, path, ref),
  // The remote's own user name and password; null for ssh and local remotes (the runner uses its own keys, or reads the path).
  async cloneCredentials(deps, integration) {
    const credentials = await credentialsOf(deps, integration);
    return credentials.password ? { username: credentials.username || "git", password: credentials.password } : null;
  },
  // A plain git remote has no web view.
  fileLink: null,
  reportStatus: null,
  publishRelease: null,
  webhook: {
    summary: "Receive a push from any git server (signed with the project's webhook secret)",
    description:
      "Body: {project_id, ref, before, after, message?, actor?}. Headers: X-Roost-Signature-256: sha256=<hex HMAC-SHA256 of the raw body> (required), X-Roost-Delivery (optional, deduplicates retries). Bodies up to 25 MB.",
    credential: {
      kind: "signature",
      header: "X-Roost-Signature-256",
      missing: "Deliveries must carry X-Roost-Signature-256: sha256=<hex HMAC-SHA256 of the body with the webhook secret>.",
      invalid: "X-Roost-Signature-256 does not match the webhook secret of the project the body names.",
    },
    payloadName: "a push",
    repairAction: WEBHOOK_SECRET_REPAIR,
    readHeaders: (headers) => ({
      event: "push",
      deliveryId: (headers.get("x-roost-delivery") ?? "").slice(0, 100),
      credential: headers.get("x-roost-signature-256"),
    }),
    // The project the body names picks the one secret to check: that of the plain git integration
    // of the repository it builds (one integration is one repository, so the secret is the project's).
    async verify(deps, delivery) {
      const projectId = gitPushProjectId(delivery.payload);
      const project = projectId ? await findProject(deps.db, projectId) : null;
      const repo = project ? await findRepository(deps.db, project.repository_id) : null;
      // An unlinked project (schema.sql migration 7) no longer builds its repository.
      const linked = repo && (await findProjectBuildingRepository(deps.db, repo.id)) === projectId ? repo : null;
      const integration = linked?.provider === NAME ? await findIntegration(deps.db, linked.integration_id) : null;
      const secret = integration ? ((await credentialsOf(deps, integration).catch(() => null))?.webhook_secret ?? "") : "";
      if (linked && integration && secret && verifyGithubSignature(secret, delivery.bytes, delivery.credential))
        return { sender: { repository: linked, projectId, integrations: [integration] } };
      return {
        refused: !integration
          ? "the body names no project that builds a plain git repository"
          : !secret
            ? "the project's git integration has no webhook secret"
            : "X-Roost-Signature-256 does not match the project's webhook secret",
        claimed: { externalId: linked?.external_id ?? null, fullName: linked?.full_name ?? null },
        repository: integration ? linked : null,
      };
    },
    parse(delivery, sender) {
      if (!sender.repository) throw new Error("a verified git push names its repository");
      return parseGitPush(delivery.payload, { id: sender.repository.external_id, fullName: sender.repository.full_name });
    },
    // A retry with the same X-Roost-Delivery is a duplicate; so is the ref at its new commit, shared
    // with polling (./poll.ts), so the next poll does not build the same push again.
    dedupeKeys: (delivery, repository, event) =>
      repository
        ? [
            ...(delivery.deliveryId ? [`git:delivery:${repository.id}:${delivery.deliveryId}`] : []),
            ...(event.commitSha ? [refKey(repository.id, event.ref, event.commitSha)] : []),
          ]
        : [],
    // The signature covers only the body, so a captured body must not build twice.
    dedupeByBody: true,
  },
};
