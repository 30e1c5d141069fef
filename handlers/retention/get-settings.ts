// GET /v1/projects/{project_id}/retention (project viewer): the project's retention overrides
// (null: the instance default), the instance defaults and the policy in effect (lib/retention/retention.ts).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { projectRetention } from "../../lib/retention/retention.ts";

const Days = z.number().int().min(0).max(36_500);
const Count = z.number().int().min(0).max(1_000_000);

export const RetentionPolicy = z.object({
  log_retention_days: Days.describe("finished builds keep their log this many days (0: no limit)"),
  artifact_retention_days: Days.describe("finished builds keep their artifacts this many days (0: no limit)"),
  keep_builds: Count.describe("per pipeline, every build older than the newest this many loses its log and artifacts (0: no limit)"),
});

export const RetentionOverrides = z.object({
  log_retention_days: Days.nullable().describe("null: the instance default (ROOST_LOG_RETENTION_DAYS)"),
  artifact_retention_days: Days.nullable().describe("null: the instance default (ROOST_ARTIFACT_RETENTION_DAYS)"),
  keep_builds: Count.nullable().describe("null: the instance default (ROOST_KEEP_BUILDS)"),
});

export const RetentionSettings = RetentionOverrides.extend({
  effective: RetentionPolicy.describe("the policy in effect; the latest successful build of each pipeline and branch is always kept"),
  instance_default: RetentionPolicy,
});

export const endpoint = defineEndpoint({
  operationId: "get_retention_settings",
  summary: "Read a project's retention of build logs and artifacts",
  response: RetentionSettings,
  async handle(_input, ctx: ProjectContext) {
    return projectRetention(ctx.db, ctx.config, ctx.project.id);
  },
});
