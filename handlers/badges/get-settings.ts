// GET /v1/projects/{project_id}/badges (project viewer): whether the project's badges are public,
// and each pipeline's badge URL.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext, RequestContext } from "../../lib/http/context.ts";
import { pipelineNames } from "../../lib/pipelines/store.ts";
import { badgesArePublic } from "../../lib/badges/badges.ts";

export const BadgeSettings = z.object({
  public: z.boolean().describe("badges readable without sign-in (default false)"),
  badges: z.array(
    z.object({ pipeline_id: z.string(), pipeline_name: z.string(), url: z.string().describe("add ?branch= for another branch than the default") }),
  ),
});

export async function badgeSettings(ctx: Pick<RequestContext, "db" | "config" | "request">, projectId: string) {
  const base = ctx.config.publicUrl ?? new URL(ctx.request.url).origin;
  const pipelines = await pipelineNames(ctx.db, projectId);
  return {
    public: await badgesArePublic(ctx.db, projectId),
    badges: pipelines.map((p) => ({ pipeline_id: p.id, pipeline_name: p.name, url: `${base}/v1/pipelines/${p.id}/badge.svg` })),
  };
}

export const endpoint = defineEndpoint({
  operationId: "get_badge_settings",
  summary: "Read a project's badge setting",
  response: BadgeSettings,
  async handle(_input, ctx: ProjectContext) {
    return badgeSettings(ctx, ctx.project.id);
  },
});
