// POST /v1/webhooks/gitea (docs/webhooks.md "Gitea and Forgejo"). The body names its repository
// (repository.id); only the secrets of the Gitea integrations whose catalogue holds that id are
// tried, each in constant time, before anything in the body is acted on. Verified deliveries
// build like GitHub's: 200 {ok, duplicate}, including the ones ignored on purpose; a body that is
// not what Gitea sends is a 400, logged.
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { readBodyBytes } from "../../lib/http.ts";
import { findIntegration } from "../../lib/db/integrations.ts";
import { findRepositoriesByExternalId, type Repository } from "../../lib/db/repositories.ts";
import { openCredentials } from "../../lib/integrations/index.ts";
import type { GiteaCredentials } from "../../lib/integrations/gitea.ts";
import { giteaHeaders, giteaRepositoryId, parseGiteaDelivery, verifyGiteaSignature } from "../../lib/forge/gitea.ts";
import { InvalidPayload, type TriggerEvent } from "../../lib/forge/event.ts";
import { acceptDelivery, recordInvalid, recordRejected } from "../../lib/webhooks/accept.ts";
import { WEBHOOK_BODY_LIMIT_BYTES, WebhookResult, contentKey, webhookAnswer } from "../../lib/webhooks/limits.ts";

export const endpoint = defineEndpoint({
  operationId: "gitea_webhook",
  summary: "Receive a Gitea or Forgejo webhook delivery",
  description: "Headers: X-Gitea-Signature or X-Forgejo-Signature (required), X-Gitea-Event / X-Forgejo-Event, X-Gitea-Delivery / X-Forgejo-Delivery. JSON bodies up to 25 MB.",
  tag: "webhooks",
  bodyLimitBytes: WEBHOOK_BODY_LIMIT_BYTES,
  response: WebhookResult,
  errors: ["webhook_signature_missing", "webhook_signature_invalid", "payload_too_large", "malformed_json", "invalid_payload"],
  async handle(_input, ctx) {
    const bytes = await readBodyBytes(ctx.request, WEBHOOK_BODY_LIMIT_BYTES);
    const { event: eventName, deliveryId, signature } = giteaHeaders(ctx.request.headers);
    const text = new TextDecoder().decode(bytes);

    // 1. The repository the body claims picks whose secrets are tried; nothing else is read before the signature holds.
    let payload: unknown;
    let decoded = true;
    try {
      payload = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch {
      decoded = false;
    }
    const claimedId = giteaRepositoryId(payload);
    const candidates = claimedId ? await findRepositoriesByExternalId(ctx.db, "gitea", claimedId) : [];
    let repository: Repository | null = null;
    if (signature) {
      for (const candidate of candidates) {
        const integration = await findIntegration(ctx.db, candidate.integration_id);
        const secret = integration ? ((await openCredentials<GiteaCredentials>(ctx.secrets, integration).catch(() => null))?.webhook_secret ?? "") : "";
        if (secret && verifyGiteaSignature(secret, bytes, signature)) {
          repository = candidate;
          break;
        }
      }
    }
    if (!repository) {
      const claimed = { externalId: claimedId, fullName: typeof (payload as any)?.repository?.full_name === "string" ? String((payload as any).repository.full_name).slice(0, 200) : null };
      const reason = !signature ? "X-Gitea-Signature is missing" : claimedId ? `the signature does not match the webhook secret of any Gitea integration that has repository ${claimedId}` : "the body names no repository whose secret could verify it";
      await recordRejected(ctx, { host: "gitea", deliveryId, event: eventName, reason, claimed, repository: candidates[0] ?? null });
      if (!signature) fail("webhook_signature_missing", "Gitea and Forgejo deliveries must carry X-Gitea-Signature; set the integration's webhook secret as the hook's secret.");
      fail("webhook_signature_invalid", "X-Gitea-Signature does not match the webhook secret.");
    }

    // 2. The sender holds the secret: a body that is not what Gitea sends is a 400, recorded for the repository.
    if (!decoded) {
      await recordInvalid(ctx, { host: "gitea", deliveryId, event: eventName, reason: "the body is not JSON", repository, projectId: null, body: text });
      fail("malformed_json", "The delivery body is not JSON.");
    }
    let event: TriggerEvent;
    try {
      event = parseGiteaDelivery(eventName, payload);
    } catch (error) {
      if (!(error instanceof InvalidPayload)) throw error;
      await recordInvalid(ctx, { host: "gitea", deliveryId, event: eventName, reason: `invalid payload: ${error.message}`, repository, projectId: null, body: text });
      fail("invalid_payload", `The delivery body is not a Gitea webhook payload: ${error.message}.`, { details: error.issues });
    }

    // 3. Deduplicated by the delivery id and, as for GitHub, by the signed body: distinct Gitea
    // events carry distinct bodies (before/after, updated_at), so an identical body is a replay.
    const accepted = await acceptDelivery(ctx, {
      host: "gitea",
      deliveryId,
      dedupeKeys: deliveryId ? [`gitea:delivery:${deliveryId}`] : [],
      contentKey: contentKey("gitea", bytes),
      event,
      repository,
      body: text,
    });
    return webhookAnswer(accepted);
  },
});
