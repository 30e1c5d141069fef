// POST /v1/webhooks/github (docs/webhooks.md; the header names GitHub sends, as listed in
// https://docs.github.com/en/webhooks/webhook-events-and-payloads#delivery-headers). Authenticated by
// X-Hub-Signature-256: HMAC-SHA256 of the raw body with a GitHub integration's webhook secret,
// checked before the body is parsed or anything is written. Verified deliveries answer
// 200 {ok, duplicate}, including the ones ignored on purpose (ping, labels, forks, deletions),
// except a body that is not what GitHub sends: 400, logged. Routed by `installation.id`.
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { readBodyBytes } from "../../lib/http.ts";
import type { Db } from "../../lib/db/client.ts";
import { listIntegrations, type Integration } from "../../lib/db/integrations.ts";
import { findRepositoriesByExternalId, type Repository } from "../../lib/db/repositories.ts";
import { openCredentials } from "../../lib/integrations/index.ts";
import type { GithubCredentials } from "../../lib/forges/github/api.ts";
import { decodeGithubBody, githubInstallationId, parseGithubDelivery, verifyGithubSignature } from "../../lib/forges/github/parse.ts";
import { InvalidPayload, type PayloadIssue, type TriggerEvent } from "../../lib/forges/event.ts";
import { acceptDelivery, recordInvalid, recordRejected } from "../../lib/webhooks/accept.ts";
import { WEBHOOK_BODY_LIMIT_BYTES, WebhookResult, contentKey, webhookAnswer } from "../../lib/webhooks/limits.ts";

export const endpoint = defineEndpoint({
  operationId: "github_webhook",
  summary: "Receive a GitHub webhook delivery",
  description: "Headers: X-Hub-Signature-256 (required), X-GitHub-Event, X-GitHub-Delivery. JSON or form-encoded (payload=…) bodies up to 25 MB.",
  tag: "webhooks",
  bodyLimitBytes: WEBHOOK_BODY_LIMIT_BYTES,
  response: WebhookResult,
  errors: ["webhook_signature_missing", "webhook_signature_invalid", "payload_too_large", "malformed_json", "invalid_payload", "webhook_delivery_failed"],
  async handle(_input, ctx) {
    const headers = ctx.request.headers;
    const bytes = await readBodyBytes(ctx.request, WEBHOOK_BODY_LIMIT_BYTES);
    const eventName = headers.get("x-github-event") ?? "";
    const deliveryId = (headers.get("x-github-delivery") ?? "").slice(0, 100);
    const signature = headers.get("x-hub-signature-256");

    // 1. Verify against each GitHub integration's secret (constant time each); nothing is parsed
    // before. One GitHub App installed on several accounts is one integration per installation,
    // all sharing the App's one webhook secret, so every integration that verifies is kept.
    const signers: Integration[] = [];
    if (signature) {
      for (const candidate of (await listIntegrations(ctx.db)).filter((i) => i.provider === "github")) {
        const { webhook_secret } = await openCredentials<GithubCredentials>(ctx.secrets, candidate).catch(() => ({ webhook_secret: "" }));
        if (webhook_secret && verifyGithubSignature(webhook_secret, bytes, signature)) signers.push(candidate);
      }
    }
    if (signers.length === 0) {
      const claimed = claimedRepository(bytes, headers.get("content-type"));
      const known = claimed.externalId ? (await findRepositoriesByExternalId(ctx.db, "github", claimed.externalId))[0] ?? null : null;
      const reason = signature ? "X-Hub-Signature-256 does not match any GitHub integration's webhook secret" : "X-Hub-Signature-256 is missing";
      await recordRejected(ctx, { forge: "github", deliveryId, event: eventName, reason, claimed, repository: known });
      if (!signature) fail("webhook_signature_missing", "GitHub deliveries must carry X-Hub-Signature-256; set a webhook secret on the hook.");
      fail("webhook_signature_invalid", "X-Hub-Signature-256 does not match the webhook secret.");
    }

    // 2. Parse the verified bytes into one neutral event; a body that is not what GitHub sends is a 400, logged.
    const invalid = async (code: "malformed_json" | "invalid_payload", reason: string, message: string, details?: PayloadIssue[]): Promise<never> => {
      await recordInvalid(ctx, { forge: "github", deliveryId, event: eventName, reason, repository: null, projectId: null, body: new TextDecoder().decode(bytes) });
      fail(code, message, details ? { details } : undefined);
    };
    let payload: unknown;
    try {
      payload = decodeGithubBody(bytes, headers.get("content-type"));
    } catch {
      return invalid("malformed_json", "the body is not JSON", "The delivery body is not JSON (or a form with a JSON payload field).");
    }
    let event: TriggerEvent;
    try {
      event = parseGithubDelivery(eventName, payload);
    } catch (error) {
      if (!(error instanceof InvalidPayload)) throw error;
      return invalid("invalid_payload", `invalid payload: ${error.message}`, `The delivery body is not a GitHub webhook payload: ${error.message}.`, error.issues);
    }

    // 3. Routed to the catalogue entry of the installation the delivery names.
    const route = await routeDelivery(ctx.db, signers, githubInstallationId(payload as Record<string, unknown>), event.repository.externalId);

    // 4. Deduplicated by X-GitHub-Delivery, and by the body for a bounded window: GitHub signs only
    // the body, so a captured body replayed under a fresh delivery id would otherwise build again,
    // and distinct GitHub events never share a body (pushes carry repository.pushed_at, pull
    // requests pull_request.updated_at).
    const keys = deliveryId ? [`github:delivery:${deliveryId}`] : [];
    const accepted = await acceptDelivery(ctx, {
      forge: "github",
      deliveryId,
      dedupeKeys: keys,
      contentKey: contentKey("github", bytes),
      event,
      repository: route.repository,
      ...(route.reason ? { unroutedReason: route.reason } : {}),
      body: new TextDecoder().decode(bytes),
    });
    return webhookAnswer(accepted);
  },
});

/**
 * The catalogue entry a verified delivery is for. GitHub App deliveries name their installation:
 * only the integration of that installation is considered. Deliveries without one (a repository
 * or organisation webhook) go to the one signing integration that sees the repository.
 */
async function routeDelivery(db: Db, signers: Integration[], installationId: string | null, externalId: string | null): Promise<{ repository: Repository | null; reason: string | null }> {
  const seen = externalId ? await findRepositoriesByExternalId(db, "github", externalId) : [];
  if (installationId !== null) {
    const integration = signers.find((i) => i.installation_id === installationId);
    if (!integration) return { repository: null, reason: `no GitHub integration with this webhook secret is for installation ${installationId}` };
    return { repository: seen.find((r) => r.integration_id === integration.id) ?? null, reason: null };
  }
  const candidates = seen.filter((r) => signers.some((i) => i.id === r.integration_id));
  if (candidates.length > 1) {
    return { repository: null, reason: `ambiguous repository identity: ${candidates.length} GitHub integrations with this webhook secret see github id ${externalId}, and the delivery names no installation` };
  }
  return { repository: candidates[0] ?? null, reason: null };
}

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
