// POST /v1/pipelines/{pipeline_id}/schedules (project maintainer): a cron schedule that builds a
// branch of the pipeline (docs/operations.md "Scheduled builds").
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { IdParam } from "../../lib/schemas/ci.ts";
import { CreateScheduleBody, ScheduleResource } from "../../lib/schemas/operations.ts";
import { scopedPipeline, scopedProject } from "../../lib/auth/project-access.ts";
import { insertSchedule, toPublicSchedule } from "../../lib/schedules.ts";

export const endpoint = defineEndpoint({
  operationId: "create_schedule",
  summary: "Create a build schedule",
  tag: "schedules",
  params: z.object({ pipeline_id: IdParam }),
  body: CreateScheduleBody,
  response: z.object({ schedule: ScheduleResource }),
  successStatus: 201,
  errors: [],
  async handle({ body }, ctx) {
    const pipeline = scopedPipeline(ctx);
    const project = scopedProject(ctx);
    const schedule = await insertSchedule(
      ctx.db,
      { ...body, branch: body.branch ?? project.default_branch, projectId: project.id, pipelineId: pipeline.id, createdBy: ctx.principal?.user.id ?? null },
      ctx.clock.now(),
    );
    return { schedule: toPublicSchedule(schedule, null) };
  },
});
