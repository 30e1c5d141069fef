// POST /v1/deployments/{deployment_id}/approve (project maintainer; an environment that lists
// approvers takes only them): a waiting deployment is approved and queued for a runner.
import { decisionEndpoint } from "../../lib/publishing/decide.ts";

export const endpoint = decisionEndpoint("approved", { operationId: "approve_deployment", summary: "Approve a deployment waiting for approval" });
