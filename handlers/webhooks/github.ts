// POST /v1/webhooks/github (docs/webhooks.md; the header names GitHub sends, as listed in
// https://docs.github.com/en/webhooks/webhook-events-and-payloads#delivery-headers). Authenticated by
// X-Hub-Signature-256: HMAC-SHA256 of the raw body with a GitHub integration's webhook secret,
// checked before the body is parsed or anything is written. Verified deliveries always answer
// 200 {ok, duplicate}, including the ones ignored on purpose (ping, labels, forks, deletions).
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { readBodyBytes } from "../../lib/http.ts";
import { listIntegrations, type Integration } from "../../lib/db/integrations.ts";
import { findRepositoriesByExternalId } from "../../lib/db/repositories.ts";
import { openCredentials } from "../../lib/integrations/index.ts";
import type { GithubCredentials } from "../../lib/integrations/github.ts";
import { decodeGithubBody, parseGithubDelivery, verifyGithubSignature } from "../../lib/forge/github.ts";
import { acceptDelivery, recordRejected } from "../../lib/webhooks/accept.ts";
import { WEBHOOK_BODY_LIMIT_BYTES, WebhookResult, contentKey, webhookAnswer } from "../../lib/webhooks/limits.ts";

export const endpoint = defineEndpoint({
  operationId: "github_webhook",
  summary: "Receive a GitHub webhook delivery",
  description: "Headers: X-Hub-Signature-256 (required), X-GitHub-Event, X-GitHub-Delivery. JSON or form-encoded (payload=…) bodies up to 25 MB.",
  tag: "webhooks",
  bodyLimitBytes: WEBHOOK_BODY_LIMIT_BYTES,
  response: WebhookResult,
  errors: ["webhook_signature_missing", "webhook_signature_invalid", "payload_too_large", "malformed_json"],
  async handle(_input, ctx) {
    const headers = ctx.request.headers;
    const bytes = await readBodyBytes(ctx.request, WEBHOOK_BODY_LIMIT_BYTES);
    const eventName = headers.get("x-github-event") ?? "";
    const deliveryId = (headers.get("x-github-delivery") ?? "").slice(0, 100);
    const signature = headers.get("x-hub-signature-256");

    // 1. Verify against each GitHub integration's secret (constant time each); nothing is parsed before.
    let integration: Integration | null = null;
    if (signature) {
      for (const candidate of (await listIntegrations(ctx.db)).filter((i) => i.provider === "github")) {
        const { webhook_secret } = await openCredentials<GithubCredentials>(ctx.secrets, candidate).catch(() => ({ webhook_secret: "" }));
        if (webhook_secret && verifyGithubSignature(webhook_secret, bytes, signature)) {
          integration = candidate;
          break;
        }
      }
    }
    if (!integration) {
      const claimed = claimedRepository(bytes, headers.get("content-type"));
      const known = claimed.externalId ? (await findRepositoriesByExternalId(ctx.db, "github", claimed.externalId))[0] ?? null : null;
      const reason = signature ? "X-Hub-Signature-256 does not match any GitHub integration's webhook secret" : "X-Hub-Signature-256 is missing";
      await recordRejected(ctx, { host: "github", deliveryId, event: eventName, reason, claimed, repository: known });
      if (!signature) fail("webhook_signature_missing", "GitHub deliveries must carry X-Hub-Signature-256; set a webhook secret on the hook.");
      fail("webhook_signature_invalid", "X-Hub-Signature-256 does not match the webhook secret.");
    }

    // 2. Parse the verified bytes into one neutral event.
    let payload: Record<string, unknown>;
    try {
      payload = decodeGithubBody(bytes, headers.get("content-type")) as Record<string, unknown>;
    } catch {
      fail("malformed_json", "The delivery body is not JSON (or a form with a JSON payload field).");
    }
    const event = parseGithubDelivery(eventName, payload);

    // 3. Only repositories of the integration whose secret signed the delivery.
    const repositories = event.repository.externalId
      ? (await findRepositoriesByExternalId(ctx.db, "github", event.repository.externalId)).filter((r) => r.integration_id === integration.id)
      : [];
    const keys = [deliveryId ? `github:delivery:${deliveryId}` : null, contentKey("github", bytes)].filter((k): k is string => k !== null);
    const accepted = await acceptDelivery(ctx, { host: "github", deliveryId, dedupeKeys: keys, event, repositories, body: new TextDecoder().decode(bytes) });
    return webhookAnswer(accepted);
  },
});

/** The repository an unverified body claims, only to explain the rejection in the log. */
function claimedRepository(bytes: Uint8Array, contentType: string | null): { externalId: string | null; fullName: string | null } {
  try {
    const payload = decodeGithubBody(bytes, contentType) as { repository?: { id?: unknown; full_name?: unknown } };
    return {
      externalId: payload.repository?.id === undefined ? null : String(payload.repository.id).slice(0, 40),
      fullName: typeof payload.repository?.full_name === "string" ? payload.repository.full_name.slice(0, 200) : null,
    };
  } catch {
    return { externalId: null, fullName: null };
  }
}
