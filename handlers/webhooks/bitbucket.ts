// POST /v1/webhooks/bitbucket (docs/webhooks.md "Bitbucket Cloud"). The body names its repository
// (repository.uuid); only the secrets of the Bitbucket integrations whose catalogue holds that
// UUID are tried, each in constant time, before anything in the body is acted on (lib/webhooks/
// catalogue-receiver.ts). Verified deliveries build like GitHub's: 200 {ok, duplicate}, including
// the ones ignored on purpose; a body that is not what Bitbucket sends is a 400, logged.
import { defineEndpoint } from "../../lib/route.ts";
import { bitbucketHeaders, bitbucketRepositoryId, parseBitbucketDelivery, verifyBitbucketSignature } from "../../lib/forges/bitbucket/parse.ts";
import { receiveCatalogueDelivery } from "../../lib/webhooks/catalogue-receiver.ts";
import { WEBHOOK_BODY_LIMIT_BYTES, WebhookResult } from "../../lib/webhooks/limits.ts";

export const endpoint = defineEndpoint({
  operationId: "bitbucket_webhook",
  summary: "Receive a Bitbucket Cloud webhook delivery",
  description: "Headers: X-Hub-Signature (required, sha256=<hex HMAC-SHA256 of the body>), X-Event-Key (repo:push, pullrequest:created, pullrequest:updated), X-Request-UUID. JSON bodies up to 25 MB.",
  tag: "webhooks",
  bodyLimitBytes: WEBHOOK_BODY_LIMIT_BYTES,
  response: WebhookResult,
  errors: ["webhook_signature_missing", "webhook_signature_invalid", "payload_too_large", "malformed_json", "invalid_payload", "webhook_delivery_failed"],
  handle: (_input, ctx) =>
    receiveCatalogueDelivery(ctx, {
      forge: "bitbucket",
      name: "Bitbucket",
      signatureHeader: "X-Hub-Signature",
      missingSignature: "Bitbucket deliveries must carry X-Hub-Signature; set the integration's webhook secret as the webhook's secret.",
      headers: bitbucketHeaders,
      repositoryId: bitbucketRepositoryId,
      verify: verifyBitbucketSignature,
      parse: parseBitbucketDelivery,
      // Bitbucket's bodies carry no time of the event, so distinct events can be byte-identical (a
      // tag deleted and pushed again at the same commit): X-Request-UUID alone dedupes.
      dedupeByBody: false,
    }),
});
