// GET /v1/runners/{runner_id}/deployments/{deployment_id}/artifacts/{artifact_id} (runner token):
// one of the files a running publish sends, streamed, with its SHA-256 in
// X-Roost-Artifact-SHA256. Only the deployment's own artifacts, only to the runner running it.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { findArtifact, readArtifact } from "../../lib/artifacts/artifacts.ts";
import { ownedRunningDeployment } from "../../lib/publishing/protocol.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_download_deployment_artifact",
  summary: "Runner: download a file a publish sends",
  params: z.object({ deployment_id: IdParam, artifact_id: IdParam }),
  produces: ["application/octet-stream"],
  errors: ["job_not_assigned", "job_finished", "not_found", "object_store_error"],
  async handle({ params }, ctx: RunnerContext) {
    const d = await ownedRunningDeployment(ctx, params.deployment_id);
    const listed = d.artifacts.find((a) => a.id === params.artifact_id);
    const artifact = listed ? await findArtifact(ctx.db, d.build_id, listed.id) : null;
    // Streamed even where user downloads redirect: the runner's request carries its token, which must not follow a redirect to the bucket.
    const body = listed && artifact ? await readArtifact(ctx.objects, artifact) : null;
    if (!artifact || !body) fail("not_found", "No such artifact in this deployment (or retention deleted it).");
    return new Response(body, {
      headers: { "content-type": "application/octet-stream", "x-roost-artifact-sha256": artifact.sha256, "content-length": String(artifact.size) },
    });
  },
});
