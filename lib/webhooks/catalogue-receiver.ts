// Receiving a delivery from a host whose body names its repository and whose hook is signed with
// the integration's webhook secret (Gitea/Forgejo, Bitbucket Cloud; docs/webhooks.md). One flow
// for all of them:
//   1. the repository the body claims picks whose secrets are tried, each in constant time;
//      nothing else in the body is read before a signature holds (401 otherwise, logged);
//   2. the sender holds the secret: a body that is not what the host sends is a 400, logged for
//      the repository;
//   3. the delivery is accepted (deduplicated, evaluated, built) like every other host's.
import type { RequestContext } from "../context.ts";
import { fail } from "../errors.ts";
import { readBodyBytes } from "../http.ts";
import { findIntegration } from "../db/integrations.ts";
import type { ForgeName } from "../forges/forge.ts";
import { findRepositoriesByExternalId, type Repository } from "../db/repositories.ts";
import { openCredentials } from "../integrations/index.ts";
import { InvalidPayload, type TriggerEvent } from "../forges/event.ts";
import { acceptDelivery, recordInvalid, recordRejected } from "./accept.ts";
import { WEBHOOK_BODY_LIMIT_BYTES, contentKey, webhookAnswer } from "./limits.ts";

export interface CatalogueForge {
  forge: ForgeName;
  /** For sentences: "Gitea", "Bitbucket". */
  name: string;
  /** The header that carries the signature, for sentences. */
  signatureHeader: string;
  /** The 401 message when the signature header is missing. */
  missingSignature: string;
  headers(headers: Headers): { event: string; deliveryId: string; signature: string | null };
  /** The repository id the body claims, before anything else is trusted. */
  repositoryId(payload: unknown): string | null;
  verify(secret: string, body: Uint8Array, signature: string): boolean;
  parse(eventName: string, payload: unknown): TriggerEvent;
  /**
   * Whether an identical signed body is a replay: true only where the host's bodies of distinct
   * events always differ (they carry before/after or a time). Otherwise the delivery id alone
   * dedupes, so two real events with the same bytes both build.
   */
  dedupeByBody: boolean;
}

export async function receiveCatalogueDelivery(ctx: RequestContext, spec: CatalogueForge) {
  const bytes = await readBodyBytes(ctx.request, WEBHOOK_BODY_LIMIT_BYTES);
  const { event: eventName, deliveryId, signature } = spec.headers(ctx.request.headers);
  const text = new TextDecoder().decode(bytes);
  const { forge } = spec;

  // 1. Verify against the secrets of the integrations that have the claimed repository.
  let payload: unknown;
  let decoded = true;
  try {
    payload = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    decoded = false;
  }
  const claimedId = spec.repositoryId(payload);
  const candidates = claimedId ? await findRepositoriesByExternalId(ctx.db, forge, claimedId) : [];
  let repository: Repository | null = null;
  if (signature) {
    for (const candidate of candidates) {
      const integration = await findIntegration(ctx.db, candidate.integration_id);
      const secret = integration ? ((await openCredentials<{ webhook_secret?: string }>(ctx.secrets, integration).catch(() => null))?.webhook_secret ?? "") : "";
      if (secret && spec.verify(secret, bytes, signature)) {
        repository = candidate;
        break;
      }
    }
  }
  if (!repository) {
    const fullName = (payload as { repository?: { full_name?: unknown } } | undefined)?.repository?.full_name;
    const claimed = { externalId: claimedId, fullName: typeof fullName === "string" ? fullName.slice(0, 200) : null };
    const reason = !signature
      ? `${spec.signatureHeader} is missing`
      : claimedId
        ? `the signature does not match the webhook secret of any ${spec.name} integration that has repository ${claimedId}`
        : "the body names no repository whose secret could verify it";
    await recordRejected(ctx, { forge, deliveryId, event: eventName, reason, claimed, repository: candidates[0] ?? null });
    if (!signature) fail("webhook_signature_missing", spec.missingSignature);
    fail("webhook_signature_invalid", `${spec.signatureHeader} does not match the webhook secret.`);
  }

  // 2. A body that is not what the host sends.
  if (!decoded) {
    await recordInvalid(ctx, { forge, deliveryId, event: eventName, reason: "the body is not JSON", repository, projectId: null, body: text });
    fail("malformed_json", "The delivery body is not JSON.");
  }
  let event: TriggerEvent;
  try {
    event = spec.parse(eventName, payload);
  } catch (error) {
    if (!(error instanceof InvalidPayload)) throw error;
    await recordInvalid(ctx, { forge, deliveryId, event: eventName, reason: `invalid payload: ${error.message}`, repository, projectId: null, body: text });
    fail("invalid_payload", `The delivery body is not a ${spec.name} webhook payload: ${error.message}.`, { details: error.issues });
  }

  // 3. Accepted like every host's delivery.
  const accepted = await acceptDelivery(ctx, {
    forge,
    deliveryId,
    dedupeKeys: deliveryId ? [`${forge}:delivery:${deliveryId}`] : [],
    ...(spec.dedupeByBody ? { contentKey: contentKey(forge, bytes) } : {}),
    event,
    repository,
    body: text,
  });
  return webhookAnswer(accepted);
}
