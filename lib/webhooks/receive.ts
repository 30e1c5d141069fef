// One receiver flow for every forge's webhook (docs/webhooks.md); handlers/webhooks/<forge>.ts
// registers it for its forge. What differs between forges is the forge's `webhook`
// (lib/forges/forge.ts):
//   1. verify: the signature or token is checked before anything in the body is acted on (401
//      otherwise, recorded with what the body claims);
//   2. parse: the sender proved who it is, so a body that is not what the forge sends is a 400,
//      recorded for the sender's repository;
//   3. route: the one catalogue entry the event is for (or none, with the reason);
//   4. accept: deduplicated, evaluated and built like every delivery (lib/webhooks/accept.ts),
//      answered 200 {ok, duplicate}, including the deliveries ignored on purpose.
import type { RequestContext } from "../http/context.ts";
import { defineEndpoint } from "../http/route.ts";
import { fail } from "../http/errors.ts";
import { readBodyBytes } from "../http/io.ts";
import { timeOrderedId } from "./ordered-id.ts";
import type { Repository } from "../integrations/repositories.ts";
import { raiseIncident } from "../daemon/incidents.ts";
import { InvalidPayload, boundedEvent, type TriggerEvent } from "../forges/event.ts";
import type { Forge, ForgeWebhook, IncomingDelivery } from "../forges/forge.ts";
import type { ForgeName } from "../forges/registry.ts";
import { VerifyAfresh, acceptDelivery, type Deps } from "./accept.ts";
import { bodyExpiry, insertDelivery, recentRejections } from "./deliveries.ts";
import { INLINE_BODY_BYTES, NO_BODY, storeBody } from "./delivery-bodies.ts";
import { WEBHOOK_BODY_LIMIT_BYTES, WebhookResult, contentKey, webhookAnswer } from "./limits.ts";

/** A forge's receiver, POST /v1/webhooks/<forge> (handlers/webhooks/<forge>.ts): authenticated by the delivery itself, so the route's rule is "webhook". */
export function webhookEndpoint(forge: Forge<ForgeName>) {
  const { webhook } = forge;
  const { kind } = webhook.credential;
  return defineEndpoint({
    operationId: `${forge.name}_webhook`,
    summary: webhook.summary,
    description: webhook.description,
    bodyLimitBytes: WEBHOOK_BODY_LIMIT_BYTES,
    response: WebhookResult,
    errors: [`webhook_${kind}_missing`, `webhook_${kind}_invalid`, "payload_too_large", "malformed_json", "invalid_payload", "webhook_delivery_failed"],
    handle: (_input, ctx) => receiveDelivery(ctx, forge),
  });
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const lenientUtf8 = new TextDecoder();

/**
 * The body's text, decoded once (the delivery log keeps it, the forge's decode reads it), and
 * whether it is well-formed UTF-8: a body that is not has U+FFFD for its stray bytes.
 */
function bodyText(bytes: Uint8Array): { text: string; utf8: boolean } {
  try {
    return { text: utf8.decode(bytes), utf8: true };
  } catch {
    return { text: lenientUtf8.decode(bytes), utf8: false };
  }
}

async function receiveDelivery(ctx: RequestContext, forge: Forge<ForgeName>) {
  const { webhook } = forge;
  const bytes = await readBodyBytes(ctx.request, WEBHOOK_BODY_LIMIT_BYTES);
  const headers = ctx.request.headers;
  const { text, utf8: wellFormed } = bodyText(bytes);
  let payload: unknown;
  let decoded = true;
  try {
    // UTF-8 JSON, unless the forge reads its bodies otherwise.
    if (webhook.decode) payload = webhook.decode(text, headers.get("content-type"));
    else if (wellFormed) payload = JSON.parse(text);
    else decoded = false;
  } catch {
    decoded = false;
  }
  const delivery: IncomingDelivery = { headers, bytes, text, payload, decoded, ...webhook.readHeaders(headers) };
  // First from what this daemon last read of the integrations (lib/integrations/as-last-read.ts):
  // anything but a delivery written under the guard that they are unchanged is done again from the
  // database, nothing recorded before. Not for a body stored in pieces before its record.
  if (webhook.verifiesAsLastRead && text.length * 3 <= INLINE_BODY_BYTES) {
    try {
      return await receiveVerified(ctx, forge, delivery, true);
    } catch (error) {
      if (!(error instanceof VerifyAfresh)) throw error;
    }
  }
  return receiveVerified(ctx, forge, delivery, false);
}

/** Steps 1-4 of the top of this file; `asLastRead`: verified as this daemon last read the integrations (VerifyAfresh when that is not enough). */
async function receiveVerified(ctx: RequestContext, forge: Forge<ForgeName>, delivery: IncomingDelivery, asLastRead: boolean) {
  const { webhook } = forge;
  const { event: eventName, deliveryId, decoded } = delivery;

  // 1. Verify; nothing else in the body is trusted before.
  const verdict = await webhook.verify(ctx, delivery, asLastRead);
  if ("refused" in verdict && asLastRead) throw new VerifyAfresh();
  if ("refused" in verdict) {
    const reason = delivery.credential ? verdict.refused : `${webhook.credential.header} is missing`;
    await recordRejected(ctx, {
      forge: forge.name,
      deliveryId,
      event: eventName,
      reason,
      claimed: verdict.claimed,
      repository: verdict.repository,
      repairAction: webhook.repairAction,
    });
    refuse(webhook, delivery.credential === null);
  }
  const { sender } = verdict;
  /** Anything but a delivery accepted under its guard is done from the database when verified as last read. */
  const fromDatabase = () => {
    if (sender.asRead) throw new VerifyAfresh();
  };

  // 2. Parse the verified body into one neutral event.
  const invalid = { forge: forge.name, deliveryId, event: eventName, repository: sender.repository, projectId: sender.projectId, body: delivery.text };
  if (!decoded) {
    fromDatabase();
    await recordInvalid(ctx, { ...invalid, reason: "the body is not JSON" });
    fail("malformed_json", webhook.notDecoded ?? "The delivery body is not JSON.");
  }
  let event: TriggerEvent;
  try {
    event = boundedEvent(webhook.parse(delivery, sender));
  } catch (error) {
    if (!(error instanceof InvalidPayload)) throw error;
    fromDatabase();
    await recordInvalid(ctx, { ...invalid, reason: `invalid payload: ${error.message}` });
    fail("invalid_payload", `The delivery body is not ${webhook.payloadName}: ${error.message}.`, { details: error.issues });
  }

  // 3. Route to the catalogue entry the event is for.
  const route = webhook.route ? await webhook.route(ctx, delivery, sender, event) : { repository: sender.repository };
  if ("refused" in route || !route.repository) fromDatabase();
  if ("refused" in route) {
    await recordRejected(ctx, {
      forge: forge.name,
      deliveryId,
      event: eventName,
      reason: route.refused,
      claimed: route.claimed,
      repository: route.repository,
      repairAction: webhook.repairAction,
    });
    refuse(webhook, false);
  }

  // 4. Accepted like every delivery: a retry with one of its identities is a duplicate.
  const signer = sender.integrations.find((i) => i.id === route.repository?.integration_id);
  const accepted = await acceptDelivery(ctx, {
    forge: forge.name,
    deliveryId,
    dedupeKeys: webhook.dedupeKeys ? webhook.dedupeKeys(delivery, route.repository, event) : deliveryId ? [`${forge.name}:delivery:${deliveryId}`] : [],
    ...(webhook.dedupeByBody ? { contentKey: contentKey(forge.name, delivery.bytes) } : {}),
    event,
    repository: route.repository,
    ...(signer ? { integration: signer } : {}),
    ...(sender.asRead ? { asRead: sender.asRead } : {}),
    ...(route.unroutedReason ? { unroutedReason: route.unroutedReason } : {}),
    body: delivery.text,
  });
  return webhookAnswer(accepted);
}

/** 401: the credential is missing, or does not verify. */
function refuse({ credential }: ForgeWebhook, missing: boolean): never {
  if (missing) fail(`webhook_${credential.kind}_missing`, credential.missing);
  fail(`webhook_${credential.kind}_invalid`, credential.invalid);
}

/** Repeated verification failures for one repository within an hour raise an incident. */
export const REJECTIONS_BEFORE_INCIDENT = 3;

/** A delivery refused before it was verified: nothing from its body is acted on; what it claims is kept only to explain the record. */
async function recordRejected(
  deps: Deps,
  input: {
    forge: ForgeName;
    deliveryId: string;
    event: string;
    reason: string;
    claimed: { externalId: string | null; fullName: string | null };
    repository: Repository | null;
    repairAction: string;
  },
): Promise<void> {
  const now = await recordRefused(deps, { ...input, verified: false, projectId: null, body: null });
  deps.log.warn("webhook delivery rejected", { host: input.forge, delivery_id: input.deliveryId, reason: input.reason });
  if (input.repository && (await recentRejections(deps.db, input.repository.id, now - 3600)) >= REJECTIONS_BEFORE_INCIDENT) {
    await raiseIncident(deps.db, now, {
      severity: "warning",
      reason: "webhook_verification_failed",
      message: `${input.forge} deliveries for ${input.repository.full_name} keep failing verification: ${input.reason}`,
      repair_action: input.repairAction,
      resource_kind: "repository",
      resource_id: input.repository.id,
      resource_name: input.repository.full_name,
    });
  }
}

/**
 * A delivery whose sender proved who it is but whose body is not what the forge sends (not JSON,
 * null, an array, fields of the wrong type): recorded with the reason, nothing acted on. The
 * receiver answers 400 so the forge's delivery log shows the failure too.
 */
async function recordInvalid(
  deps: Deps,
  input: { forge: ForgeName; deliveryId: string; event: string; reason: string; repository: Repository | null; projectId: string | null; body: string },
): Promise<void> {
  const claimed = { externalId: input.repository?.external_id ?? null, fullName: input.repository?.full_name ?? null };
  await recordRefused(deps, { ...input, verified: true, claimed });
  deps.log.warn("webhook delivery invalid", { host: input.forge, delivery_id: input.deliveryId, reason: input.reason });
}

/** Inserts a refused delivery's record; returns when it was received. */
async function recordRefused(
  deps: Deps,
  d: {
    forge: ForgeName;
    deliveryId: string;
    event: string;
    verified: boolean;
    reason: string;
    claimed: { externalId: string | null; fullName: string | null };
    repository: Repository | null;
    projectId: string | null;
    body: string | null;
  },
): Promise<number> {
  const now = deps.clock.now();
  const id = timeOrderedId();
  await insertDelivery(deps.db, {
    id,
    host: d.forge,
    delivery_id: d.deliveryId,
    event: d.event,
    action: "",
    verified: d.verified,
    result: "rejected",
    reason: d.reason,
    repository_external_id: d.claimed.externalId,
    repository_full_name: d.claimed.fullName,
    repository_id: d.repository?.id ?? null,
    project_id: d.projectId,
    commit_sha: null,
    decisions: [],
    duplicate_of: null,
    received_at: now,
    body: d.body === null ? NO_BODY : await storeBody(deps.db, id, d.body, bodyExpiry(now)),
  });
  return now;
}
