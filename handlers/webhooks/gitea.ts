// POST /v1/webhooks/gitea (docs/webhooks.md "Gitea and Forgejo"): the body names its repository;
// only the secrets of the Gitea integrations whose catalogue holds it are tried. The one receiver
// flow is lib/webhooks/receive.ts; what is Gitea's is lib/forges/gitea/.
import { gitea } from "../../lib/forges/gitea/index.ts";
import { webhookEndpoint } from "../../lib/webhooks/receive.ts";

export const endpoint = webhookEndpoint(gitea);
