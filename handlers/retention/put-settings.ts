// PUT /v1/projects/{project_id}/retention (project maintainer): replaces the project's retention
// overrides; a field left out or null follows the instance default, 0 keeps forever. The next
// background pass applies it (docs/operations.md "Retention").
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { projectRetention, setProjectRetention } from "../../lib/retention/retention.ts";
import { RetentionOverrides, RetentionSettings } from "./get-settings.ts";

export const endpoint = defineEndpoint({
  operationId: "put_retention_settings",
  summary: "Set how long a project's builds keep their logs and artifacts",
  body: z
    .object({
      log_retention_days: RetentionOverrides.shape.log_retention_days.default(null),
      artifact_retention_days: RetentionOverrides.shape.artifact_retention_days.default(null),
      keep_builds: RetentionOverrides.shape.keep_builds.default(null),
    })
    .strict(),
  response: RetentionSettings,
  async handle({ body }, ctx: ProjectContext) {
    await setProjectRetention(ctx.db, ctx.project.id, body, ctx.clock.now());
    return projectRetention(ctx.db, ctx.config, ctx.project.id);
  },
});
