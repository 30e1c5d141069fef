// POST /v1/webhooks/github (docs/webhooks.md): GitHub App deliveries, authenticated by
// X-Hub-Signature-256 (HMAC-SHA256 of the raw body with a GitHub integration's webhook secret) and
// routed by the installation they name. The one receiver flow is lib/webhooks/receive.ts; what is
// GitHub's is lib/forges/github/.
import { github } from "../../lib/forges/github/index.ts";
import { webhookEndpoint } from "../../lib/webhooks/receive.ts";

export const endpoint = webhookEndpoint(github);
