// POST /v1/pipelines/{pipeline_id}/schedules (project maintainer): a cron schedule that builds a
// branch of the pipeline (docs/operations.md "Scheduled builds").
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { CreateScheduleBody, ScheduleResource } from "../../lib/schedules/wire.ts";
import { insertSchedule, toPublicSchedule } from "../../lib/schedules/schedules.ts";

export const endpoint = defineEndpoint({
  operationId: "create_schedule",
  summary: "Create a build schedule",
  body: CreateScheduleBody,
  ...created({ schedule: ScheduleResource }),
  async handle({ body }, ctx: ProjectContext<"pipeline_id">) {
    const schedule = await insertSchedule(
      ctx.db,
      { ...body, branch: body.branch ?? ctx.project.default_branch, projectId: ctx.project.id, pipelineId: ctx.pipeline.id, createdBy: ctx.principal.user.id },
      ctx.clock.now(),
    );
    return { schedule: toPublicSchedule(schedule, null) };
  },
});
