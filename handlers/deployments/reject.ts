// POST /v1/deployments/{deployment_id}/reject (project maintainer; an environment that lists
// approvers takes only them): a waiting deployment is rejected and never runs.
import { decisionEndpoint } from "../../lib/publishing/decide.ts";

export const endpoint = decisionEndpoint("rejected", { operationId: "reject_deployment", summary: "Reject a deployment waiting for approval" });
