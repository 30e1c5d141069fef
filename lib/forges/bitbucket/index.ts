// Bitbucket Cloud: one workspace through a workspace access token or an app password
// (docs/any-git.md). Hooks are signed with the integration's webhook secret and name their
// repository by UUID (../repository-secret.ts); ./parse.ts reads the payloads, ./api.ts is the
// client. Bitbucket Server / Data Center has another API and is not covered.
import { z } from "zod";
import type { Integration } from "../../integrations/store.ts";
import { openCredentials } from "../../integrations/credentials.ts";
import { forgeClient } from "../http.ts";
import { ForgeUrl, apiConnection, apiOperations, connectBody, type Forge, type ForgeDeps } from "../forge.ts";
import { repositorySecretWebhook } from "../repository-secret.ts";
import { BitbucketClient, bitbucketCloneCredentials, type BitbucketCredentials } from "./api.ts";
import { bitbucketHeaders, bitbucketRepositoryId, parseBitbucketDelivery, verifyBitbucketSignature } from "./parse.ts";

const NAME = "bitbucket";

const ConnectBody = connectBody(NAME, {
  api_url: ForgeUrl.default("https://api.bitbucket.org/2.0").describe("Bitbucket Cloud's REST API"),
  workspace: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,100}$/, "must be the workspace ID as in bitbucket.org/{workspace}")
    .describe("the workspace whose repositories the catalogue lists (role=member)"),
  access_token: z
    .string()
    .min(1)
    .max(1000)
    .optional()
    .describe("a workspace access token with repository (and repository:write for commit statuses); or username and app_password"),
  username: z.string().min(1).max(255).optional().describe("with app_password: the account's username"),
  app_password: z.string().min(1).max(255).optional().describe("an app password with Repositories read (and write for commit statuses)"),
  webhook_secret: z.string().min(16, "must be at least 16 characters").max(255).describe("the secret set on the repositories' webhooks"),
}).refine((b) => Boolean(b.access_token) !== Boolean(b.username && b.app_password), {
  message: "give either access_token, or username and app_password",
  path: ["access_token"],
});

const clientFor = (deps: ForgeDeps, integration: Integration) => forgeClient(BitbucketClient, deps, integration);

/** The workspace, the one way of signing in that was given, and the webhook secret. */
function credentialsOf(body: z.output<typeof ConnectBody>): BitbucketCredentials {
  return body.access_token
    ? { workspace: body.workspace, access_token: body.access_token, webhook_secret: body.webhook_secret }
    : { workspace: body.workspace, username: body.username!, app_password: body.app_password!, webhook_secret: body.webhook_secret };
}

export const bitbucket: Forge<typeof NAME> = {
  name: NAME,
  connectBody: ConnectBody,
  connect: (body: z.output<typeof ConnectBody>) =>
    apiConnection(body.api_url, { web_url: `https://bitbucket.org/${body.workspace}`, credentials: credentialsOf(body) }),
  ...apiOperations(clientFor, "full_name"),
  cloneCredentials: async (deps, integration) => bitbucketCloneCredentials(await openCredentials<BitbucketCredentials>(deps.secrets, integration)),
  fileLink: (repositoryUrl, sha) => `${repositoryUrl}/src/${sha}/{path}#lines-{line}`,
  publishRelease: null,
  webhook: repositorySecretWebhook({
    summary: "Receive a Bitbucket Cloud webhook delivery",
    description:
      "Headers: X-Hub-Signature (required, sha256=<hex HMAC-SHA256 of the body>), X-Event-Key (repo:push, pullrequest:created, pullrequest:updated), X-Request-UUID. JSON bodies up to 25 MB.",
    forge: NAME,
    title: "Bitbucket",
    signatureHeader: "X-Hub-Signature",
    missingSignature: "Bitbucket deliveries must carry X-Hub-Signature; set the integration's webhook secret as the webhook's secret.",
    readHeaders: bitbucketHeaders,
    repositoryId: bitbucketRepositoryId,
    verify: verifyBitbucketSignature,
    parse: parseBitbucketDelivery,
    // Bitbucket's bodies carry no time of the event, so distinct events can be byte-identical (a
    // tag deleted and pushed again at the same commit): X-Request-UUID alone dedupes.
    dedupeByBody: false,
  }),
};
