// GET /v1/builds/{build_id}/artifacts/{artifact_id} (project viewer): the file, streamed, with
// its SHA-256 in X-Roost-Artifact-SHA256 and a download file name.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { IdParam } from "../../lib/schemas/ci.ts";
import { scopedBuild } from "../../lib/auth/project-access.ts";
import { artifactExists, artifactFile, findArtifact } from "../../lib/artifacts.ts";

export const endpoint = defineEndpoint({
  operationId: "download_build_artifact",
  summary: "Download one artifact",
  tag: "builds",
  params: z.object({ build_id: IdParam, artifact_id: IdParam }),
  produces: ["application/octet-stream"],
  errors: [],
  async handle({ params }, ctx) {
    const build = scopedBuild(ctx);
    const artifact = await findArtifact(ctx.db, build.id, params.artifact_id);
    if (!artifact || !artifactExists(ctx.config.dataDir, artifact)) fail("not_found", "No artifact with that id in this build.");
    const name = artifact.path
      .split("/")
      .pop()!
      .replace(/[^\w.-]/g, "_");
    return new Response(Bun.file(artifactFile(ctx.config.dataDir, build.id, artifact.id)), {
      headers: {
        "content-type": "application/octet-stream",
        "content-disposition": `attachment; filename="${name}"`,
        "x-roost-artifact-sha256": artifact.sha256,
        "content-length": String(artifact.size),
      },
    });
  },
});
