// Webhook request limits and the receivers' answer (docs/webhooks.md).
import { sha256Hex } from "../crypto/hash.ts";
import { z } from "zod";
import { fail } from "../http/errors.ts";
import type { DeliveryResult } from "./deliveries.ts";

/** GitHub and GitLab both stop at 25 MB; a larger body is refused before it is read. */
export const WEBHOOK_BODY_LIMIT_BYTES = 25 * 1024 * 1024;

/**
 * The content key: a digest of the exact bytes. GitHub signs only the body, so a captured body
 * replayed under a fresh X-GitHub-Delivery would otherwise trigger again (the signature does not cover the headers:
 * https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries);
 * a genuine new GitHub event never has byte-identical content. For GitHub only: GitLab sends
 * identical bytes for distinct events (a tag deleted and pushed again at the same commit).
 */
export function contentKey(forge: string, body: Uint8Array): string {
  return `${forge}:content:${sha256Hex(body)}`;
}

/** What both receivers answer to a verified delivery (docs/webhooks.md: ok, duplicate). */
export const WebhookResult = z.object({
  ok: z.boolean(),
  duplicate: z
    .boolean()
    .describe(
      "true when this delivery (same delivery id or GitLab Idempotency-Key, or for GitHub the same body within 7 days) was already received; nothing was created",
    ),
  delivery_id: z.string().describe("Roost's record of this delivery (GET /v1/webhook-deliveries/{id})"),
  builds: z.array(z.object({ id: z.string(), build_number: z.number().int(), pipeline_id: z.string() })),
});

/**
 * The answer to a verified delivery, from what acceptDelivery did. One Roost could not act on is
 * a 5xx, so the host records the failure and redelivers it (docs/webhooks.md).
 */
export function webhookAnswer(accepted: {
  deliveryId: string;
  duplicate: boolean;
  result: DeliveryResult;
  builds: { id: string; build_number: number; pipeline_id: string }[];
}): z.output<typeof WebhookResult> {
  if (accepted.result === "failed") {
    fail(
      "webhook_delivery_failed",
      `Roost could not act on this delivery and built nothing; it is recorded as delivery ${accepted.deliveryId}. Redeliver it once the cause is fixed.`,
    );
  }
  return {
    ok: true,
    duplicate: accepted.duplicate,
    delivery_id: accepted.deliveryId,
    builds: accepted.builds.map((b) => ({ id: b.id, build_number: b.build_number, pipeline_id: b.pipeline_id })),
  };
}
