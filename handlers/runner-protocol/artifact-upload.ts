// PUT /v1/runners/{runner_id}/jobs/{job_id}/artifacts?path=<relative path> (runner token): the
// raw file as the body, its SHA-256 in X-Roost-Artifact-SHA256. Refused over
// ROOST_MAX_ARTIFACT_BYTES (413, before reading when Content-Length says so), when the digest
// differs (422), when the data directory's disk is full (507) and when the S3 object store refuses
// (502); nothing is recorded and no object is left then. 201 means the bytes are stored (fsynced on
// disk, or acknowledged by the bucket) and match the digest (lib/artifacts/artifacts.ts).
import { z } from "zod";
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { requestBody } from "../../lib/http/io.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { ownedRunningJob } from "../../lib/runners/protocol.ts";
import { storeArtifact, validArtifactPath } from "../../lib/artifacts/artifacts.ts";
import { ArtifactAnswer } from "../../lib/runners/protocol-wire.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_upload_artifact",
  summary: "Runner: upload one artifact",
  params: z.object({ job_id: IdParam }),
  query: z.object({ path: z.string().max(500).refine(validArtifactPath, "must be a relative path inside the workspace") }),
  ...created(ArtifactAnswer),
  errors: [
    "job_not_assigned",
    "job_finished",
    "payload_too_large",
    "artifact_checksum_mismatch",
    "artifact_exists",
    "insufficient_storage",
    "object_store_error",
  ],
  async handle({ params, query }, ctx: RunnerContext) {
    const job = await ownedRunningJob(ctx, params.job_id);
    const sha = ctx.request.headers.get("x-roost-artifact-sha256") ?? "";
    if (!/^[0-9a-fA-F]{64}$/.test(sha)) fail("invalid_request", "Send the file's SHA-256 (hex) in X-Roost-Artifact-SHA256.");
    const declared = ctx.request.headers.get("content-length");
    // An artifact may be gigabytes on a slow link: no bound on the whole body's time (the
    // connection's idle timeout still ends an upload that stalls), unlike every other request body.
    ctx.setBodyTimeout(0);
    const artifact = await storeArtifact(ctx.db, ctx.objects, {
      buildId: job.build_id,
      jobId: job.id,
      path: query.path,
      body: requestBody(ctx.request),
      expectedSha256: sha,
      maxBytes: ctx.config.runners.maxArtifactBytes,
      declaredLength: declared === null ? null : Number(declared),
      now: ctx.clock.now(),
    });
    return { artifact };
  },
});
