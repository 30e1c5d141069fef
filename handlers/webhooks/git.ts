// POST /v1/webhooks/git (docs/any-git.md "The push webhook"): a push told by any git server (a
// post-receive hook, a forge without its own receiver). The body {project_id, ref, before, after,
// message?, actor?} names the project; X-Roost-Signature-256 must be "sha256=" + the hex
// HMAC-SHA256 of the raw body with the webhook secret of that project's plain git integration
// (one integration is one repository, so the secret is the project's). Nothing in the body is
// acted on before the signature holds; the build is decided and logged like any delivery.
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { readBodyBytes } from "../../lib/http.ts";
import { findProject, findProjectBuildingRepository } from "../../lib/db/projects.ts";
import { findRepository, type Repository } from "../../lib/db/repositories.ts";
import { findIntegration } from "../../lib/db/integrations.ts";
import { openCredentials } from "../../lib/integrations/index.ts";
import type { GitCredentials } from "../../lib/forges/git/remote.ts";
import { verifyGithubSignature } from "../../lib/forges/github/parse.ts";
import { gitPushProjectId, parseGitPush } from "../../lib/forges/git/parse.ts";
import { InvalidPayload, type TriggerEvent } from "../../lib/forges/event.ts";
import { acceptDelivery, recordInvalid, recordRejected } from "../../lib/webhooks/accept.ts";
import { refKey } from "../../lib/forges/git/poll.ts";
import { WEBHOOK_BODY_LIMIT_BYTES, WebhookResult, contentKey, webhookAnswer } from "../../lib/webhooks/limits.ts";

const SIGNATURE_INVALID = "X-Roost-Signature-256 does not match the webhook secret of the project the body names.";

export const endpoint = defineEndpoint({
  operationId: "git_webhook",
  summary: "Receive a push from any git server (signed with the project's webhook secret)",
  description:
    "Body: {project_id, ref, before, after, message?, actor?}. Headers: X-Roost-Signature-256: sha256=<hex HMAC-SHA256 of the raw body> (required), X-Roost-Delivery (optional, deduplicates retries). Bodies up to 25 MB.",
  tag: "webhooks",
  bodyLimitBytes: WEBHOOK_BODY_LIMIT_BYTES,
  response: WebhookResult,
  errors: ["webhook_signature_missing", "webhook_signature_invalid", "payload_too_large", "malformed_json", "invalid_payload", "webhook_delivery_failed"],
  async handle(_input, ctx) {
    const bytes = await readBodyBytes(ctx.request, WEBHOOK_BODY_LIMIT_BYTES);
    const signature = ctx.request.headers.get("x-roost-signature-256");
    const deliveryId = (ctx.request.headers.get("x-roost-delivery") ?? "").slice(0, 100);
    const text = new TextDecoder().decode(bytes);

    // 1. The project the body names picks the one secret to check.
    let payload: unknown;
    let decoded = true;
    try {
      payload = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch {
      decoded = false;
    }
    const projectId = gitPushProjectId(payload);
    const project = projectId ? await findProject(ctx.db, projectId) : null;
    const repo = project ? await findRepository(ctx.db, project.repository_id) : null;
    // An unlinked project (schema.sql migration 7) no longer builds its repository.
    const linked = repo && (await findProjectBuildingRepository(ctx.db, repo.id)) === projectId ? repo : null;
    const integration = linked?.provider === "git" ? await findIntegration(ctx.db, linked.integration_id) : null;
    const secret = integration ? ((await openCredentials<GitCredentials>(ctx.secrets, integration).catch(() => null))?.webhook_secret ?? "") : "";
    const repository: Repository | null = secret && verifyGithubSignature(secret, bytes, signature) ? linked : null;
    if (!repository) {
      const reason = !signature
        ? "X-Roost-Signature-256 is missing"
        : !integration
          ? "the body names no project that builds a plain git repository"
          : !secret
            ? "the project's git integration has no webhook secret"
            : "X-Roost-Signature-256 does not match the project's webhook secret";
      await recordRejected(ctx, { forge: "git", deliveryId, event: "push", reason, claimed: { externalId: linked?.external_id ?? null, fullName: linked?.full_name ?? null }, repository: integration ? linked : null });
      if (!signature) fail("webhook_signature_missing", "Deliveries must carry X-Roost-Signature-256: sha256=<hex HMAC-SHA256 of the body with the webhook secret>.");
      fail("webhook_signature_invalid", SIGNATURE_INVALID);
    }

    // 2. Verified: a body that is not the documented shape is a 400, logged for the project.
    if (!decoded) {
      await recordInvalid(ctx, { forge: "git", deliveryId, event: "push", reason: "the body is not JSON", repository, projectId, body: text });
      fail("malformed_json", "The delivery body is not JSON.");
    }
    let event: TriggerEvent;
    try {
      event = parseGitPush(payload, { id: repository.external_id, fullName: repository.full_name });
    } catch (error) {
      if (!(error instanceof InvalidPayload)) throw error;
      await recordInvalid(ctx, { forge: "git", deliveryId, event: "push", reason: `invalid payload: ${error.message}`, repository, projectId, body: text });
      fail("invalid_payload", `The delivery body is not a push: ${error.message}.`, { details: error.issues });
    }

    // 3. A retry with the same X-Roost-Delivery, or the same signed body again, is a duplicate:
    // the signature covers only the body, so a captured body must not build twice.
    const accepted = await acceptDelivery(ctx, {
      forge: "git",
      deliveryId,
      // The ref at its new commit is shared with polling (lib/forges/git/poll.ts), so the next poll does not build the same push again.
      dedupeKeys: [...(deliveryId ? [`git:delivery:${repository.id}:${deliveryId}`] : []), ...(event.commitSha ? [refKey(repository.id, event.ref, event.commitSha)] : [])],
      contentKey: contentKey("git", bytes),
      event,
      repository,
      body: text,
    });
    return webhookAnswer(accepted);
  },
});
