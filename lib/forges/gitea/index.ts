// Gitea and Forgejo (the same REST API and webhooks) through an access token against the instance
// URL (docs/any-git.md). Hooks are signed with the integration's webhook secret and name their
// repository by id (../repository-secret.ts); ./parse.ts reads the payloads, ./api.ts is the client.
import { z } from "zod";
import type { Integration } from "../../integrations/store.ts";
import { openCredentials } from "../../integrations/credentials.ts";
import { forgeClient } from "../http.ts";
import { ForgeUrl, apiConnection, apiOperations, connectBody, type Forge, type ForgeDeps } from "../forge.ts";
import { repositorySecretWebhook } from "../repository-secret.ts";
import { GiteaClient, type GiteaCredentials } from "./api.ts";
import { giteaHeaders, giteaRepositoryId, parseGiteaDelivery, verifyGiteaSignature } from "./parse.ts";

const NAME = "gitea";

const ConnectBody = connectBody(NAME, {
  api_url: ForgeUrl.describe("the Gitea or Forgejo instance URL, e.g. https://codeberg.org"),
  access_token: z.string().min(1).max(255).describe("a token with read:repository (and write:repository for commit statuses)"),
  webhook_secret: z.string().min(16, "must be at least 16 characters").max(255).describe("the secret set on the repositories' webhooks"),
});

const clientFor = (deps: ForgeDeps, integration: Integration) => forgeClient(GiteaClient, deps, integration);

export const gitea: Forge<typeof NAME> = {
  name: NAME,
  connectBody: ConnectBody,
  connect: (body: z.output<typeof ConnectBody>) =>
    apiConnection(body.api_url, { credentials: { access_token: body.access_token, webhook_secret: body.webhook_secret } satisfies GiteaCredentials }),
  ...apiOperations(clientFor, "full_name"),
  // Gitea accepts any user name with a token as the password.
  cloneCredentials: async (deps, integration) => ({
    username: "roost",
    password: (await openCredentials<GiteaCredentials>(deps.secrets, integration)).access_token,
  }),
  fileLink: (repositoryUrl, sha) => `${repositoryUrl}/src/commit/${sha}/{path}#L{line}`,
  publishRelease: null,
  webhook: repositorySecretWebhook({
    summary: "Receive a Gitea or Forgejo webhook delivery",
    description:
      "Headers: X-Gitea-Signature or X-Forgejo-Signature (required), X-Gitea-Event / X-Forgejo-Event, X-Gitea-Delivery / X-Forgejo-Delivery. JSON bodies up to 25 MB.",
    forge: NAME,
    title: "Gitea",
    signatureHeader: "X-Gitea-Signature",
    missingSignature: "Gitea and Forgejo deliveries must carry X-Gitea-Signature; set the integration's webhook secret as the hook's secret.",
    readHeaders: giteaHeaders,
    repositoryId: giteaRepositoryId,
    verify: verifyGiteaSignature,
    parse: parseGiteaDelivery,
    // Distinct Gitea events carry distinct bodies (before/after, updated_at): an identical signed body is a replay.
    dedupeByBody: true,
  }),
};
