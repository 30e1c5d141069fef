// PATCH /v1/pipelines/{pipeline_id}/schedules/{schedule_id} (project maintainer): changes the
// given fields. A new expression or time zone, or enabling, counts from now: no past slot fires.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { IdParam } from "../../lib/schemas/ci.ts";
import { ScheduleResource, UpdateScheduleBody } from "../../lib/schemas/operations.ts";
import { scopedPipeline } from "../../lib/auth/project-access.ts";
import { findSchedule, lastRun, toPublicSchedule, updateSchedule, type Schedule } from "../../lib/schedules.ts";
import type { Executor } from "../../lib/db/client.ts";

/** The schedule, when it belongs to the pipeline the route authorized; 404 otherwise. */
export async function scheduleOfPipeline(db: Executor, pipelineId: string, scheduleId: string): Promise<Schedule> {
  const schedule = await findSchedule(db, scheduleId);
  if (!schedule || schedule.pipeline_id !== pipelineId) fail("not_found", "No schedule with that id on this pipeline.");
  return schedule;
}

export const endpoint = defineEndpoint({
  operationId: "update_schedule",
  summary: "Update a build schedule",
  tag: "schedules",
  params: z.object({ pipeline_id: IdParam, schedule_id: IdParam }),
  body: UpdateScheduleBody,
  response: z.object({ schedule: ScheduleResource }),
  errors: [],
  async handle({ params, body }, ctx) {
    const current = await scheduleOfPipeline(ctx.db, scopedPipeline(ctx).id, params.schedule_id);
    const changes = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
    const schedule = await updateSchedule(ctx.db, current, changes, ctx.clock.now());
    return { schedule: toPublicSchedule(schedule, await lastRun(ctx.db, schedule.id)) };
  },
});
