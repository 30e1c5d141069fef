// The webhooks of forges whose bodies name their repository and whose hooks are signed with the
// webhook secret of the integration that has it (Gitea/Forgejo and Bitbucket Cloud;
// docs/webhooks.md): the repository the body claims picks whose secrets are tried, each in
// constant time, and nothing else in the body is read before a signature holds.
import { findIntegration } from "../integrations/store.ts";
import { findRepositoriesByExternalId } from "../integrations/repositories.ts";
import { openCredentials } from "../integrations/credentials.ts";
import type { TriggerEvent } from "./event.ts";
import { WEBHOOK_SECRET_REPAIR, type ForgeWebhook, type IncomingDelivery, type Refusal, type Sender, type WebhookDeps } from "./forge.ts";

export interface RepositorySecretWebhook {
  summary: string;
  description: string;
  forge: string;
  /** For sentences: "Gitea", "Bitbucket". */
  title: string;
  /** The header that carries the signature, and the 401 message when it is missing. */
  signatureHeader: string;
  missingSignature: string;
  readHeaders: ForgeWebhook["readHeaders"];
  /** The repository id the unverified body claims, or null. */
  repositoryId(payload: unknown): string | null;
  verify(secret: string, body: Uint8Array, signature: string): boolean;
  parse(eventName: string, payload: unknown): TriggerEvent;
  dedupeByBody: boolean;
}

export function repositorySecretWebhook(spec: RepositorySecretWebhook): ForgeWebhook {
  return {
    summary: spec.summary,
    description: spec.description,
    credential: {
      kind: "signature",
      header: spec.signatureHeader,
      missing: spec.missingSignature,
      invalid: `${spec.signatureHeader} does not match the webhook secret.`,
    },
    payloadName: `a ${spec.title} webhook payload`,
    repairAction: WEBHOOK_SECRET_REPAIR,
    readHeaders: spec.readHeaders,
    verify: (deps, delivery) => verifyByRepositorySecret(deps, delivery, spec),
    parse: (delivery) => spec.parse(delivery.event, delivery.payload),
    dedupeByBody: spec.dedupeByBody,
  };
}

async function verifyByRepositorySecret(deps: WebhookDeps, delivery: IncomingDelivery, spec: RepositorySecretWebhook): Promise<{ sender: Sender } | Refusal> {
  const claimedId = spec.repositoryId(delivery.payload);
  const candidates = claimedId ? await findRepositoriesByExternalId(deps.db, spec.forge, claimedId) : [];
  if (delivery.credential) {
    for (const candidate of candidates) {
      const integration = await findIntegration(deps.db, candidate.integration_id);
      const secret = integration
        ? ((await openCredentials<{ webhook_secret?: string }>(deps.secrets, integration).catch(() => null))?.webhook_secret ?? "")
        : "";
      if (integration && secret && spec.verify(secret, delivery.bytes, delivery.credential))
        return { sender: { repository: candidate, projectId: null, integrations: [integration] } };
    }
  }
  const fullName = (delivery.payload as { repository?: { full_name?: unknown } } | undefined)?.repository?.full_name;
  return {
    refused: claimedId
      ? `the signature does not match the webhook secret of any ${spec.title} integration that has repository ${claimedId}`
      : "the body names no repository whose secret could verify it",
    claimed: { externalId: claimedId, fullName: typeof fullName === "string" ? fullName.slice(0, 200) : null },
    repository: candidates[0] ?? null,
  };
}
