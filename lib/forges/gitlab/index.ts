// GitLab (gitlab.com or an instance) through an access token (docs/gitlab.md). Each delivery
// carries X-Gitlab-Token, which must be the current webhook token of the project that builds the
// repository the payload names (./tokens.ts): a plain shared secret, compared in constant time.
// ./parse.ts reads the payloads, ./api.ts is the REST client.
import { z } from "zod";
import type { Integration } from "../../integrations/store.ts";
import { findRepositoriesByExternalId, findRepository } from "../../integrations/repositories.ts";
import { openCredentials } from "../../integrations/credentials.ts";
import { forgeClient } from "../http.ts";
import { ForgeUrl, apiConnection, apiOperations, connectBody, type Forge, type ForgeDeps, type Refusal, type WebhookDeps } from "../forge.ts";
import { GitlabClient, type GitlabCredentials } from "./api.ts";
import { gitlabPublishRelease } from "./releases.ts";
import { gitlabProjectId, parseGitlabDelivery } from "./parse.ts";
import { projectForWebhookToken } from "./tokens.ts";

const NAME = "gitlab";

const ConnectBody = connectBody(NAME, {
  api_url: ForgeUrl.default("https://gitlab.com").describe("the GitLab instance URL"),
  access_token: z.string().min(1).max(255).describe("a token with read_api (and api for commit statuses)"),
});

const TOKEN_INVALID = "X-Gitlab-Token is not the current webhook token of the repository this delivery names.";

const clientFor = (deps: ForgeDeps, integration: Integration) => forgeClient(GitlabClient, deps, integration);

export const gitlab: Forge<typeof NAME> = {
  name: NAME,
  connectBody: ConnectBody,
  connect: (body: z.output<typeof ConnectBody>) =>
    apiConnection(body.api_url, { credentials: { access_token: body.access_token } satisfies GitlabCredentials }),
  ...apiOperations(clientFor, "external_id"),
  // GitLab takes any user name with a token as the password; oauth2 is the documented one.
  cloneCredentials: async (deps, integration) => ({
    username: "oauth2",
    password: (await openCredentials<GitlabCredentials>(deps.secrets, integration)).access_token,
  }),
  // https://docs.gitlab.com/ee/user/project/repository/files/#link-to-specific-lines
  fileLink: (repositoryUrl, sha) => `${repositoryUrl}/-/blob/${sha}/{path}#L{line}`,
  publishRelease: gitlabPublishRelease((deps, integration) => clientFor(deps, integration)),
  webhook: {
    summary: "Receive a GitLab webhook delivery",
    description: "Headers: X-Gitlab-Token (required), X-Gitlab-Event, X-Gitlab-Event-UUID, Idempotency-Key. JSON bodies up to 25 MB.",
    credential: {
      kind: "token",
      header: "X-Gitlab-Token",
      missing: "GitLab deliveries must carry X-Gitlab-Token; set the project's webhook token as the hook's secret token.",
      invalid: TOKEN_INVALID,
    },
    payloadName: "a GitLab webhook payload",
    repairAction:
      "Copy the current webhook token of the project that builds this repository into the GitLab hook (a new one: the project's Settings tab, Create or rotate the webhook token; the API: POST /v1/projects/{id}/webhook-token).",
    // https://docs.gitlab.com/user/project/integrations/webhooks/#delivery-headers
    readHeaders: (headers) => ({
      event: headers.get("x-gitlab-event") ?? "",
      deliveryId: (headers.get("x-gitlab-event-uuid") ?? "").slice(0, 100),
      credential: headers.get("x-gitlab-token"),
    }),
    // The token names its project (roost_whk_<project id>…) and is checked before anything in the body is acted on.
    async verify(deps, delivery) {
      const owner = delivery.credential ? await projectForWebhookToken(deps.db, delivery.credential) : null;
      const repository = owner ? await findRepository(deps.db, owner.repositoryId) : null;
      if (owner && repository) return { sender: { repository, projectId: owner.projectId, integrations: [] } };
      const claimed = gitlabProjectId(objectOrEmpty(delivery.payload))?.slice(0, 40) ?? null;
      return refusal(
        deps,
        claimed ? `X-Gitlab-Token is not the current token of GitLab project ${claimed}` : "X-Gitlab-Token is not the current token of any project",
        delivery.payload,
      );
    },
    parse: (delivery) => parseGitlabDelivery(delivery.event, delivery.payload),
    // The token is refused for any repository but its project's (even on the same GitLab).
    async route(deps, delivery, sender, event) {
      const { repository } = sender;
      if (repository && event.repository.externalId === repository.external_id && repository.provider === NAME) return { repository };
      return refusal(
        deps,
        event.repository.externalId
          ? `X-Gitlab-Token is not the current token of GitLab project ${event.repository.externalId}`
          : "the payload names no project",
        delivery.payload,
      );
    },
    // Only by GitLab's event identities: GitLab sends byte-identical bodies for distinct events (a
    // tag deleted and pushed again at the same commit), so the body is no identity. Idempotency-Key
    // is the one that survives a manual "Resend".
    dedupeKeys(delivery) {
      const idempotencyKey = (delivery.headers.get("idempotency-key") ?? "").slice(0, 200);
      return [delivery.deliveryId ? `gitlab:delivery:${delivery.deliveryId}` : null, idempotencyKey ? `gitlab:idempotency:${idempotencyKey}` : null].filter(
        (k): k is string => k !== null,
      );
    },
    dedupeByBody: false,
  },
};

function objectOrEmpty(payload: unknown): Record<string, unknown> {
  return typeof payload === "object" && payload !== null && !Array.isArray(payload) ? (payload as Record<string, unknown>) : {};
}

/** The project an unverified body claims, only to explain the refusal in the log. */
async function refusal(deps: WebhookDeps, reason: string, payload: unknown): Promise<Refusal> {
  const body = objectOrEmpty(payload) as { project?: { path_with_namespace?: unknown } | null };
  const externalId = gitlabProjectId(body)?.slice(0, 40) ?? null;
  const name = body.project && typeof body.project === "object" ? body.project.path_with_namespace : undefined;
  const known = externalId ? ((await findRepositoriesByExternalId(deps.db, NAME, externalId))[0] ?? null) : null;
  return { refused: reason, claimed: { externalId, fullName: typeof name === "string" ? name.slice(0, 200) : null }, repository: known };
}
