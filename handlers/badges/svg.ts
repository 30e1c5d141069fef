// GET /v1/pipelines/{pipeline_id}/badge.svg?branch= (public when the project allows it): the
// status of the pipeline's newest build on the branch as an SVG badge (lib/badges/badges.ts).
import { createHash } from "node:crypto";
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { fail } from "../../lib/http/errors.ts";
import { BranchName } from "../../lib/pipelines/wire.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { findPipeline } from "../../lib/pipelines/store.ts";
import { findProject } from "../../lib/projects/store.ts";
import { badgeStatus, badgeSvg, badgesArePublic } from "../../lib/badges/badges.ts";

export const endpoint = defineEndpoint({
  operationId: "pipeline_badge",
  summary: "A pipeline's status badge (SVG)",
  description:
    "passing, failing, running or unknown for the newest build on the branch that was not canceled. Cache-Control: no-cache with an ETag; If-None-Match answers 304.",
  authNote: "anyone, when the project's badges are public (PUT /v1/projects/{project_id}/badges); otherwise 404 as if the pipeline did not exist",
  params: z.object({ pipeline_id: IdParam }),
  query: z.object({ branch: BranchName.optional().describe("default: the project's default branch") }),
  produces: ["image/svg+xml"],
  errors: ["not_found"],
  async handle({ params, query }, ctx) {
    const pipeline = await findPipeline(ctx.db, params.pipeline_id);
    const project = pipeline ? await findProject(ctx.db, pipeline.project_id) : null;
    if (!pipeline || !project || !(await badgesArePublic(ctx.db, project.id))) fail("not_found", "No pipeline with that id.");
    const status = await badgeStatus(ctx.db, pipeline.id, query.branch ?? project.default_branch);
    const svg = badgeSvg(pipeline.name, status);
    const etag = `"${createHash("sha256").update(svg).digest("base64url").slice(0, 22)}"`;
    const headers = { "content-type": "image/svg+xml; charset=utf-8", "cache-control": "no-cache, max-age=0", etag };
    const match = ctx.request.headers.get("if-none-match");
    if (match && match.split(",").some((t) => t.trim().replace(/^W\//, "") === etag)) return new Response(null, { status: 304, headers });
    return new Response(svg, { headers });
  },
});
