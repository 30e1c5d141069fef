// POST /v1/webhooks/gitea (docs/webhooks.md "Gitea and Forgejo"). The body names its repository
// (repository.id); only the secrets of the Gitea integrations whose catalogue holds that id are
// tried, each in constant time, before anything in the body is acted on (lib/webhooks/
// catalogue-receiver.ts). Verified deliveries build like GitHub's: 200 {ok, duplicate}, including
// the ones ignored on purpose; a body that is not what Gitea sends is a 400, logged.
import { defineEndpoint } from "../../lib/route.ts";
import { giteaHeaders, giteaRepositoryId, parseGiteaDelivery, verifyGiteaSignature } from "../../lib/forges/gitea/parse.ts";
import { receiveCatalogueDelivery } from "../../lib/webhooks/catalogue-receiver.ts";
import { WEBHOOK_BODY_LIMIT_BYTES, WebhookResult } from "../../lib/webhooks/limits.ts";

export const endpoint = defineEndpoint({
  operationId: "gitea_webhook",
  summary: "Receive a Gitea or Forgejo webhook delivery",
  description: "Headers: X-Gitea-Signature or X-Forgejo-Signature (required), X-Gitea-Event / X-Forgejo-Event, X-Gitea-Delivery / X-Forgejo-Delivery. JSON bodies up to 25 MB.",
  tag: "webhooks",
  bodyLimitBytes: WEBHOOK_BODY_LIMIT_BYTES,
  response: WebhookResult,
  errors: ["webhook_signature_missing", "webhook_signature_invalid", "payload_too_large", "malformed_json", "invalid_payload", "webhook_delivery_failed"],
  handle: (_input, ctx) =>
    receiveCatalogueDelivery(ctx, {
      forge: "gitea",
      name: "Gitea",
      signatureHeader: "X-Gitea-Signature",
      missingSignature: "Gitea and Forgejo deliveries must carry X-Gitea-Signature; set the integration's webhook secret as the hook's secret.",
      headers: giteaHeaders,
      repositoryId: giteaRepositoryId,
      verify: verifyGiteaSignature,
      parse: parseGiteaDelivery,
      // Distinct Gitea events carry distinct bodies (before/after, updated_at): an identical signed body is a replay.
      dedupeByBody: true,
    }),
});
