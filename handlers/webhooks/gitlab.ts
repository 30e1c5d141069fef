// POST /v1/webhooks/gitlab (docs/webhooks.md). X-Gitlab-Token must be the current webhook
// token of the project that builds the repository the payload names (a token of another project
// is refused, even from the same GitLab); it is a plain shared secret, compared in constant time.
// Deduplicated by X-Gitlab-Event-UUID and Idempotency-Key (the one that survives a manual
// "Resend") only. A body that is not what GitLab sends answers 400 and is logged.
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { readBodyBytes } from "../../lib/http.ts";
import { findRepositoriesByExternalId, findRepository } from "../../lib/db/repositories.ts";
import { gitlabProjectId, parseGitlabDelivery } from "../../lib/forges/gitlab/parse.ts";
import { InvalidPayload, type PayloadIssue, type TriggerEvent } from "../../lib/forges/event.ts";
import { acceptDelivery, recordInvalid, recordRejected } from "../../lib/webhooks/accept.ts";
import { WEBHOOK_BODY_LIMIT_BYTES, WebhookResult, webhookAnswer } from "../../lib/webhooks/limits.ts";
import { projectForWebhookToken } from "../../lib/forges/gitlab/tokens.ts";

const TOKEN_INVALID = "X-Gitlab-Token is not the current webhook token of the repository this delivery names.";

export const endpoint = defineEndpoint({
  operationId: "gitlab_webhook",
  summary: "Receive a GitLab webhook delivery",
  description: "Headers: X-Gitlab-Token (required), X-Gitlab-Event, X-Gitlab-Event-UUID, Idempotency-Key. JSON bodies up to 25 MB.",
  tag: "webhooks",
  bodyLimitBytes: WEBHOOK_BODY_LIMIT_BYTES,
  response: WebhookResult,
  errors: ["webhook_token_missing", "webhook_token_invalid", "payload_too_large", "malformed_json", "invalid_payload", "webhook_delivery_failed"],
  async handle(_input, ctx) {
    const headers = ctx.request.headers;
    const bytes = await readBodyBytes(ctx.request, WEBHOOK_BODY_LIMIT_BYTES);
    const eventHeader = headers.get("x-gitlab-event") ?? "";
    const uuid = (headers.get("x-gitlab-event-uuid") ?? "").slice(0, 100);
    const idempotencyKey = (headers.get("idempotency-key") ?? "").slice(0, 200);
    const token = headers.get("x-gitlab-token");

    // 1. The token names its project (roost_whk_<project id>…) and is checked before anything in
    // the body is acted on; the body is decoded here only to explain a rejection in the log.
    let payload: unknown;
    let decoded = true;
    try {
      payload = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch {
      decoded = false;
    }
    const claimed = claimedProject(payload);
    const owner = token ? await projectForWebhookToken(ctx.db, token) : null;
    const repository = owner ? await findRepository(ctx.db, owner.repositoryId) : null;
    const reject = async (reason: string) => {
      const known = claimed.externalId ? ((await findRepositoriesByExternalId(ctx.db, "gitlab", claimed.externalId))[0] ?? null) : null;
      await recordRejected(ctx, { forge: "gitlab", deliveryId: uuid, event: eventHeader, reason, claimed, repository: known });
    };
    if (!token) {
      await reject("X-Gitlab-Token is missing");
      fail("webhook_token_missing", "GitLab deliveries must carry X-Gitlab-Token; set the project's webhook token as the hook's secret token.");
    }
    if (!owner || !repository) {
      await reject(claimed.externalId ? `X-Gitlab-Token is not the current token of GitLab project ${claimed.externalId}` : "X-Gitlab-Token is not the current token of any project");
      fail("webhook_token_invalid", TOKEN_INVALID);
    }

    // 2. The sender holds the project's token: a body that is not what GitLab sends is a 400, recorded for that project.
    const invalid = async (code: "malformed_json" | "invalid_payload", reason: string, message: string, details?: PayloadIssue[]): Promise<never> => {
      await recordInvalid(ctx, { forge: "gitlab", deliveryId: uuid, event: eventHeader, reason, repository, projectId: owner.projectId, body: new TextDecoder().decode(bytes) });
      fail(code, message, details ? { details } : undefined);
    };
    if (!decoded) await invalid("malformed_json", "the body is not JSON", "The delivery body is not JSON.");
    let event: TriggerEvent;
    try {
      event = parseGitlabDelivery(eventHeader, payload);
    } catch (error) {
      if (!(error instanceof InvalidPayload)) throw error;
      return invalid("invalid_payload", `invalid payload: ${error.message}`, `The delivery body is not a GitLab webhook payload: ${error.message}.`, error.issues);
    }

    // 3. The token is refused for any repository but its project's (even on the same GitLab).
    if (event.repository.externalId !== repository.external_id || repository.provider !== "gitlab") {
      await reject(event.repository.externalId ? `X-Gitlab-Token is not the current token of GitLab project ${event.repository.externalId}` : "the payload names no project");
      fail("webhook_token_invalid", TOKEN_INVALID);
    }

    // 4. Deduplicated only by GitLab's event identities: GitLab sends byte-identical bodies for
    // distinct events (a tag deleted and pushed again at the same commit), so the body is no identity.
    const keys = [uuid ? `gitlab:delivery:${uuid}` : null, idempotencyKey ? `gitlab:idempotency:${idempotencyKey}` : null].filter((k): k is string => k !== null);
    const accepted = await acceptDelivery(ctx, { forge: "gitlab", deliveryId: uuid, dedupeKeys: keys, event, repository, body: new TextDecoder().decode(bytes) });
    return webhookAnswer(accepted);
  },
});

/** The project an unverified body claims, only to explain a rejection in the log. */
function claimedProject(payload: unknown): { externalId: string | null; fullName: string | null } {
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return { externalId: null, fullName: null };
  const p = payload as { project?: { path_with_namespace?: unknown } | null };
  const externalId = gitlabProjectId(payload as Record<string, unknown>)?.slice(0, 40) ?? null;
  const name = p.project && typeof p.project === "object" ? p.project.path_with_namespace : undefined;
  return { externalId, fullName: typeof name === "string" ? name.slice(0, 200) : null };
}
