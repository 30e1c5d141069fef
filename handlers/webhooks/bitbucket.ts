// POST /v1/webhooks/bitbucket (docs/webhooks.md "Bitbucket Cloud"): the body names its repository
// (repository.uuid); only the secrets of the Bitbucket integrations whose catalogue holds it are
// tried. The one receiver flow is lib/webhooks/receive.ts; what is Bitbucket's is lib/forges/bitbucket/.
import { bitbucket } from "../../lib/forges/bitbucket/index.ts";
import { webhookEndpoint } from "../../lib/webhooks/receive.ts";

export const endpoint = webhookEndpoint(bitbucket);
