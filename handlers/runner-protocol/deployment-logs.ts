// POST /v1/runners/{runner_id}/deployments/{deployment_id}/logs (runner token): a publish's log
// lines, appended to its build's log under the publish's step, exactly as a job's
// (lib/logs/append-endpoint.ts: idempotent, 416 log_gap with next_line).
import { z } from "zod";
import { IdParam } from "../../lib/schemas/shared.ts";
import { besidePosition, logAppendEndpoint } from "../../lib/logs/append-endpoint.ts";
import { ownedRunningDeployment } from "../../lib/publishing/protocol.ts";
import { findDeployment } from "../../lib/publishing/deployments.ts";

export const endpoint = logAppendEndpoint(
  { operationId: "runner_append_deployment_logs", summary: "Runner: append a publish's log lines (idempotent)", params: z.object({ deployment_id: IdParam }) },
  { from: "deployments", idParam: "deployment_id", read: besidePosition("deployments", findDeployment) },
  async (ctx, id, found) => {
    const d = await ownedRunningDeployment(ctx, id, found);
    return { id: d.id, build_id: d.build_id, status: async () => ({ "x-roost-job-status": "running" }) };
  },
);
