// GET /v1/builds/{build_id}/artifacts/{artifact_id} (project viewer): the file, streamed, with
// its SHA-256 in X-Roost-Artifact-SHA256 and a download file name; or, with an S3 store and
// ROOST_S3_PRESIGN_SECONDS set, 302 to a presigned URL the bucket serves it from.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { findArtifact, readArtifact } from "../../lib/artifacts/artifacts.ts";
import { artifactKey } from "../../lib/object-store/store.ts";

export const endpoint = defineEndpoint({
  operationId: "download_build_artifact",
  summary: "Download one artifact",
  params: z.object({ artifact_id: IdParam }),
  produces: ["application/octet-stream"],
  errors: ["object_store_error"],
  async handle({ params }, ctx: ProjectContext<"build_id">) {
    const artifact = await findArtifact(ctx.db, ctx.build.id, params.artifact_id);
    if (!artifact) fail("not_found", "No artifact with that id in this build.");
    const name = artifact.path
      .split("/")
      .pop()!
      .replace(/[^\w.-]/g, "_");
    // Authorized above; the URL itself is the bucket's short-lived grant for this one object.
    const presigned = ctx.objects.presign(artifactKey(ctx.build.id, artifact.id), { filename: name });
    if (presigned) return new Response(null, { status: 302, headers: { location: presigned, "cache-control": "no-store" } });
    const body = await readArtifact(ctx.objects, artifact);
    if (!body) fail("not_found", "No artifact with that id in this build.");
    return new Response(body, {
      headers: {
        "content-type": "application/octet-stream",
        "content-disposition": `attachment; filename="${name}"`,
        "x-roost-artifact-sha256": artifact.sha256,
        "content-length": String(artifact.size),
      },
    });
  },
});
