// POST /v1/webhooks/git (docs/any-git.md "The push webhook"): a push told by any git server (a
// post-receive hook, a forge without its own receiver), {project_id, ref, before, after, message?,
// actor?}, signed with the webhook secret of that project's plain git integration. The one
// receiver flow is lib/webhooks/receive.ts; what is the plain git remote's is lib/forges/git/.
import { git } from "../../lib/forges/git/index.ts";
import { webhookEndpoint } from "../../lib/webhooks/receive.ts";

export const endpoint = webhookEndpoint(git);
