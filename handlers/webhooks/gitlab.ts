// POST /v1/webhooks/gitlab (docs/webhooks.md). X-Gitlab-Token must be the current webhook
// token of the repository the payload names (a token of another project is refused, even from
// the same GitLab); it is a plain shared secret, compared in constant time. Deduplicated by
// X-Gitlab-Event-UUID and Idempotency-Key (the one that survives a manual "Resend").
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { readBodyBytes } from "../../lib/http.ts";
import { findRepositoriesByExternalId } from "../../lib/db/repositories.ts";
import { gitlabProjectId, parseGitlabDelivery } from "../../lib/forge/gitlab.ts";
import { acceptDelivery, recordRejected } from "../../lib/webhooks/accept.ts";
import { WEBHOOK_BODY_LIMIT_BYTES, WebhookResult, contentKey, webhookAnswer } from "../../lib/webhooks/limits.ts";
import { repositoryForWebhookToken } from "../../lib/webhooks/gitlab-tokens.ts";

export const endpoint = defineEndpoint({
  operationId: "gitlab_webhook",
  summary: "Receive a GitLab webhook delivery",
  description: "Headers: X-Gitlab-Token (required), X-Gitlab-Event, X-Gitlab-Event-UUID, Idempotency-Key. JSON bodies up to 25 MB.",
  tag: "webhooks",
  bodyLimitBytes: WEBHOOK_BODY_LIMIT_BYTES,
  response: WebhookResult,
  errors: ["webhook_token_missing", "webhook_token_invalid", "payload_too_large", "malformed_json"],
  async handle(_input, ctx) {
    const headers = ctx.request.headers;
    const bytes = await readBodyBytes(ctx.request, WEBHOOK_BODY_LIMIT_BYTES);
    const eventHeader = headers.get("x-gitlab-event") ?? "";
    const uuid = (headers.get("x-gitlab-event-uuid") ?? "").slice(0, 100);
    const idempotencyKey = (headers.get("idempotency-key") ?? "").slice(0, 200);
    const token = headers.get("x-gitlab-token");

    // 1. The token can only be checked against the repository the payload names, so the JSON is read first; nothing is written before the check.
    let payload: Record<string, unknown>;
    try {
      payload = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
    } catch {
      fail("malformed_json", "The delivery body is not JSON.");
    }
    const projectId = gitlabProjectId(payload);
    const claimed = { externalId: projectId, fullName: ((payload.project as { path_with_namespace?: string } | undefined)?.path_with_namespace ?? null) };
    const candidates = projectId ? await findRepositoriesByExternalId(ctx.db, "gitlab", projectId) : [];
    const repository = token ? await repositoryForWebhookToken(ctx.db, candidates, token) : null;
    if (!repository) {
      const reason = !token ? "X-Gitlab-Token is missing" : projectId ? `X-Gitlab-Token is not the current token of GitLab project ${projectId}` : "the payload names no project";
      await recordRejected(ctx, { host: "gitlab", deliveryId: uuid, event: eventHeader, reason, claimed, repository: candidates[0] ?? null });
      if (!token) fail("webhook_token_missing", "GitLab deliveries must carry X-Gitlab-Token; set the repository's webhook token as the hook's secret token.");
      fail("webhook_token_invalid", "X-Gitlab-Token is not the current webhook token of the repository this delivery names.");
    }

    // 2. Parse into one neutral event and act on the verified repository only.
    const event = parseGitlabDelivery(eventHeader, payload);
    const keys = [
      uuid ? `gitlab:delivery:${uuid}` : null,
      idempotencyKey ? `gitlab:idempotency:${idempotencyKey}` : null,
      contentKey("gitlab", bytes),
    ].filter((k): k is string => k !== null);
    const accepted = await acceptDelivery(ctx, { host: "gitlab", deliveryId: uuid, dedupeKeys: keys, event, repositories: [repository], body: new TextDecoder().decode(bytes) });
    return webhookAnswer(accepted);
  },
});
