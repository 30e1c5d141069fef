// GitHub (and GitHub Enterprise Server) through a GitHub App installation, one integration per
// installation (docs/github.md). Deliveries are signed with the App's webhook secret
// (X-Hub-Signature-256 over the raw body) and name their installation; ./parse.ts reads them,
// ./api.ts is the REST client.
import { z } from "zod";
import type { Integration } from "../../integrations/store.ts";
import { catalogueForWebhook } from "../../integrations/as-last-read.ts";
import { findRepositoriesByExternalId, type Repository } from "../../integrations/repositories.ts";
import { openCredentials } from "../../integrations/credentials.ts";
import { forgeAccess } from "../http.ts";
import {
  ForgeUrl,
  WEBHOOK_SECRET_REPAIR,
  apiConnection,
  apiOperations,
  connectBody,
  type Forge,
  type ForgeDeps,
  type Refusal,
  type Route,
  type Sender,
  type WebhookDeps,
} from "../forge.ts";
import { GithubClient, type GithubCredentials } from "./api.ts";
import { githubPublishRelease } from "./releases.ts";
import { decodeGithubBody, githubInstallationId, parseGithubDelivery, verifyGithubSignature } from "./parse.ts";

const NAME = "github";

const ConnectBody = connectBody(NAME, {
  api_url: ForgeUrl.default("https://api.github.com").describe("https://api.github.com, or https://HOST/api/v3 for GitHub Enterprise Server"),
  web_url: ForgeUrl.default("https://github.com"),
  app_id: z.string().regex(/^\d{1,20}$/, "must be the numeric GitHub App id"),
  installation_id: z.string().regex(/^\d{1,20}$/, "must be the numeric installation id"),
  private_key: z.string().min(1).max(10_000).describe("the GitHub App's PEM private key"),
  webhook_secret: z.string().min(16, "must be at least 16 characters").max(255).describe("the App's webhook secret"),
});

export async function githubClientFor(deps: ForgeDeps, integration: Integration): Promise<GithubClient> {
  return new GithubClient(
    { api_url: integration.api_url, app_id: integration.app_id ?? "", installation_id: integration.installation_id ?? "" },
    await openCredentials<GithubCredentials>(deps.secrets, integration),
    forgeAccess(deps),
  );
}

export const github: Forge<typeof NAME> = {
  name: NAME,
  connectBody: ConnectBody,
  connect: (body: z.output<typeof ConnectBody>) =>
    apiConnection(body.api_url, {
      web_url: body.web_url,
      app_id: body.app_id,
      installation_id: body.installation_id,
      credentials: { private_key: body.private_key, webhook_secret: body.webhook_secret } satisfies GithubCredentials,
    }),
  ...apiOperations(githubClientFor, "full_name"),
  // An installation token scoped to the one repository, read-only, valid an hour.
  cloneCredentials: async (deps, integration, repository) => ({
    username: "x-access-token",
    password: await (await githubClientFor(deps, integration)).cloneToken(repository.external_id),
  }),
  // https://docs.github.com/en/repositories/working-with-files/using-files/getting-permanent-links-to-files
  fileLink: (repositoryUrl, sha) => `${repositoryUrl}/blob/${sha}/{path}#L{line}`,
  publishRelease: githubPublishRelease((deps, integration) => githubClientFor(deps, integration)),
  webhook: {
    summary: "Receive a GitHub webhook delivery",
    description: "Headers: X-Hub-Signature-256 (required), X-GitHub-Event, X-GitHub-Delivery. JSON or form-encoded (payload=…) bodies up to 25 MB.",
    credential: {
      kind: "signature",
      header: "X-Hub-Signature-256",
      missing: "GitHub deliveries must carry X-Hub-Signature-256; set a webhook secret on the hook.",
      invalid: "X-Hub-Signature-256 does not match the webhook secret.",
    },
    payloadName: "a GitHub webhook payload",
    notDecoded: "The delivery body is not JSON (or a form with a JSON payload field).",
    repairAction: WEBHOOK_SECRET_REPAIR,
    // https://docs.github.com/en/webhooks/webhook-events-and-payloads#delivery-headers
    readHeaders: (headers) => ({
      event: headers.get("x-github-event") ?? "",
      deliveryId: (headers.get("x-github-delivery") ?? "").slice(0, 100),
      credential: headers.get("x-hub-signature-256"),
    }),
    decode: decodeGithubBody,
    // Every GitHub integration's secret is tried. One GitHub App installed on several accounts is
    // one integration per installation, all sharing the App's one webhook secret, so every
    // integration that verifies is kept, and the installation the delivery names picks among them.
    // The repository the body names is read beside the integrations (only read: nothing in the body
    // is acted on before the signature verifies), for route, or to explain a refusal.
    // With `asLastRead`, both as this daemon last read them (lib/integrations/as-last-read.ts).
    verifiesAsLastRead: true,
    async verify(deps, delivery, asLastRead = false) {
      const signers: Integration[] = [];
      const externalId = claimedExternalId(delivery.payload);
      const { integrations, repositories, asRead } = await catalogueForWebhook(deps.db, NAME, externalId, asLastRead);
      if (delivery.credential) {
        for (const candidate of integrations.filter((i) => i.provider === NAME)) {
          const { webhook_secret } = await openCredentials<GithubCredentials>(deps.secrets, candidate).catch(() => ({ webhook_secret: "" }));
          if (webhook_secret && verifyGithubSignature(webhook_secret, delivery.bytes, delivery.credential)) signers.push(candidate);
        }
      }
      const claimed = externalId ? { externalId, repositories } : undefined;
      if (signers.length > 0)
        return { sender: { repository: null, projectId: null, integrations: signers, ...(claimed ? { claimed } : {}), ...(asRead ? { asRead } : {}) } };
      return refusal("X-Hub-Signature-256 does not match any GitHub integration's webhook secret", delivery.payload, repositories);
    },
    parse: (delivery) => parseGithubDelivery(delivery.event, delivery.payload),
    route: (deps, delivery, sender, event) =>
      routeDelivery(deps, sender, githubInstallationId(delivery.payload as Record<string, unknown>), event.repository.externalId),
    // Also by the body, for a bounded window: GitHub signs only the body, so a captured body
    // replayed under a fresh delivery id would otherwise build again, and distinct GitHub events
    // never share a body (pushes carry repository.pushed_at, pull requests pull_request.updated_at).
    dedupeByBody: true,
  },
};

/**
 * The catalogue entry a verified delivery is for. GitHub App deliveries name their installation:
 * only the integration of that installation is considered. Deliveries without one (a repository
 * or organisation webhook) go to the one signing integration that sees the repository.
 */
async function routeDelivery(deps: WebhookDeps, sender: Sender, installationId: string | null, externalId: string | null): Promise<Route> {
  const signers = sender.integrations;
  const seen: Repository[] = !externalId
    ? []
    : sender.claimed?.externalId === externalId
      ? sender.claimed.repositories
      : await findRepositoriesByExternalId(deps.db, NAME, externalId);
  if (installationId !== null) {
    const integration = signers.find((i) => i.installation_id === installationId);
    if (!integration) return { repository: null, unroutedReason: `no GitHub integration with this webhook secret is for installation ${installationId}` };
    return { repository: seen.find((r) => r.integration_id === integration.id) ?? null };
  }
  const candidates = seen.filter((r) => signers.some((i) => i.id === r.integration_id));
  if (candidates.length > 1) {
    return {
      repository: null,
      unroutedReason: `ambiguous repository identity: ${candidates.length} GitHub integrations with this webhook secret see github id ${externalId}, and the delivery names no installation`,
    };
  }
  return { repository: candidates[0] ?? null };
}

/** The repository id a body names (not verified): for route once it verifies, or to explain its refusal. */
function claimedExternalId(payload: unknown): string | null {
  const repository = (payload as { repository?: { id?: unknown } } | null | undefined)?.repository;
  return repository?.id === undefined ? null : String(repository.id).slice(0, 40);
}

/** The repository an unverified body claims (its catalogue entries, read beside the verification), only to explain the refusal in the log. */
function refusal(reason: string, payload: unknown, known: Repository[]): Refusal {
  const repository = (payload as { repository?: { full_name?: unknown } } | null | undefined)?.repository;
  return {
    refused: reason,
    claimed: { externalId: claimedExternalId(payload), fullName: typeof repository?.full_name === "string" ? repository.full_name.slice(0, 200) : null },
    repository: known[0] ?? null,
  };
}
