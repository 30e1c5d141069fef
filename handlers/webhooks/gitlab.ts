// POST /v1/webhooks/gitlab (docs/webhooks.md): X-Gitlab-Token must be the current webhook token
// of the project that builds the repository the payload names (a token of another project is
// refused, even from the same GitLab). The one receiver flow is lib/webhooks/receive.ts; what is
// GitLab's is lib/forges/gitlab/.
import { gitlab } from "../../lib/forges/gitlab/index.ts";
import { webhookEndpoint } from "../../lib/webhooks/receive.ts";

export const endpoint = webhookEndpoint(gitlab);
