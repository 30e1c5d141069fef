// PUT /v1/projects/{project_id}/badges (project maintainer): {public: true} lets anyone read the
// project's status badges (for a README); off by default.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { setBadgesPublic } from "../../lib/badges/badges.ts";
import { BadgeSettings, badgeSettings } from "./get-settings.ts";

export const endpoint = defineEndpoint({
  operationId: "put_badge_settings",
  summary: "Make a project's badges public or private",
  body: z.object({ public: z.boolean() }).strict(),
  response: BadgeSettings,
  async handle({ body }, ctx: ProjectContext) {
    await setBadgesPublic(ctx.db, ctx.project.id, body.public, ctx.clock.now());
    return badgeSettings(ctx, ctx.project.id);
  },
});
