// POST /v1/webhooks/bitbucket (docs/webhooks.md "Bitbucket Cloud"). The body names its repository
// (repository.uuid); only the secrets of the Bitbucket integrations whose catalogue holds that
// UUID are tried, each in constant time, before anything in the body is acted on. Verified
// deliveries build like GitHub's: 200 {ok, duplicate}, including the ones ignored on purpose; a
// body that is not what Bitbucket sends is a 400, logged.
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { readBodyBytes } from "../../lib/http.ts";
import { findIntegration } from "../../lib/db/integrations.ts";
import { findRepositoriesByExternalId, type Repository } from "../../lib/db/repositories.ts";
import { openCredentials } from "../../lib/integrations/index.ts";
import type { BitbucketCredentials } from "../../lib/integrations/bitbucket.ts";
import { bitbucketHeaders, bitbucketRepositoryId, parseBitbucketDelivery, verifyBitbucketSignature } from "../../lib/forge/bitbucket.ts";
import { InvalidPayload, type TriggerEvent } from "../../lib/forge/event.ts";
import { acceptDelivery, recordInvalid, recordRejected } from "../../lib/webhooks/accept.ts";
import { WEBHOOK_BODY_LIMIT_BYTES, WebhookResult, webhookAnswer } from "../../lib/webhooks/limits.ts";

export const endpoint = defineEndpoint({
  operationId: "bitbucket_webhook",
  summary: "Receive a Bitbucket Cloud webhook delivery",
  description: "Headers: X-Hub-Signature (required, sha256=<hex HMAC-SHA256 of the body>), X-Event-Key (repo:push, pullrequest:created, pullrequest:updated), X-Request-UUID. JSON bodies up to 25 MB.",
  tag: "webhooks",
  bodyLimitBytes: WEBHOOK_BODY_LIMIT_BYTES,
  response: WebhookResult,
  errors: ["webhook_signature_missing", "webhook_signature_invalid", "payload_too_large", "malformed_json", "invalid_payload"],
  async handle(_input, ctx) {
    const bytes = await readBodyBytes(ctx.request, WEBHOOK_BODY_LIMIT_BYTES);
    const { event: eventName, deliveryId, signature } = bitbucketHeaders(ctx.request.headers);
    const text = new TextDecoder().decode(bytes);

    // 1. The repository the body claims picks whose secrets are tried; nothing else is read before the signature holds.
    let payload: unknown;
    let decoded = true;
    try {
      payload = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch {
      decoded = false;
    }
    const claimedId = bitbucketRepositoryId(payload);
    const candidates = claimedId ? await findRepositoriesByExternalId(ctx.db, "bitbucket", claimedId) : [];
    let repository: Repository | null = null;
    if (signature) {
      for (const candidate of candidates) {
        const integration = await findIntegration(ctx.db, candidate.integration_id);
        const secret = integration ? ((await openCredentials<BitbucketCredentials>(ctx.secrets, integration).catch(() => null))?.webhook_secret ?? "") : "";
        if (secret && verifyBitbucketSignature(secret, bytes, signature)) {
          repository = candidate;
          break;
        }
      }
    }
    if (!repository) {
      const claimed = { externalId: claimedId, fullName: typeof (payload as any)?.repository?.full_name === "string" ? String((payload as any).repository.full_name).slice(0, 200) : null };
      const reason = !signature ? "X-Hub-Signature is missing" : claimedId ? `the signature does not match the webhook secret of any Bitbucket integration that has repository ${claimedId}` : "the body names no repository whose secret could verify it";
      await recordRejected(ctx, { host: "bitbucket", deliveryId, event: eventName, reason, claimed, repository: candidates[0] ?? null });
      if (!signature) fail("webhook_signature_missing", "Bitbucket deliveries must carry X-Hub-Signature; set the integration's webhook secret as the webhook's secret.");
      fail("webhook_signature_invalid", "X-Hub-Signature does not match the webhook secret.");
    }

    // 2. The sender holds the secret: a body that is not what Bitbucket sends is a 400, recorded for the repository.
    if (!decoded) {
      await recordInvalid(ctx, { host: "bitbucket", deliveryId, event: eventName, reason: "the body is not JSON", repository, projectId: null, body: text });
      fail("malformed_json", "The delivery body is not JSON.");
    }
    let event: TriggerEvent;
    try {
      event = parseBitbucketDelivery(eventName, payload);
    } catch (error) {
      if (!(error instanceof InvalidPayload)) throw error;
      await recordInvalid(ctx, { host: "bitbucket", deliveryId, event: eventName, reason: `invalid payload: ${error.message}`, repository, projectId: null, body: text });
      fail("invalid_payload", `The delivery body is not a Bitbucket webhook payload: ${error.message}.`, { details: error.issues });
    }

    // 3. Deduplicated by X-Request-UUID only, as GitLab by its event UUID: Bitbucket's bodies carry
    // no time of the event, so distinct events can be byte-identical (a tag deleted and pushed
    // again at the same commit), and each of those must build.
    const accepted = await acceptDelivery(ctx, {
      host: "bitbucket",
      deliveryId,
      dedupeKeys: deliveryId ? [`bitbucket:delivery:${deliveryId}`] : [],
      event,
      repository,
      body: text,
    });
    return webhookAnswer(accepted);
  },
});
