// PATCH /v1/pipelines/{pipeline_id}/schedules/{schedule_id} (project maintainer): changes the
// given fields. A new expression or time zone, or enabling, counts from now: no past slot fires.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { ScheduleResource, UpdateScheduleBody } from "../../lib/schedules/wire.ts";
import { findSchedule, lastRun, toPublicSchedule, updateSchedule, type Schedule } from "../../lib/schedules/schedules.ts";
import type { Executor } from "../../lib/db/client.ts";

/** The schedule, when it belongs to the pipeline the route authorized; 404 otherwise. */
export async function scheduleOfPipeline(db: Executor, pipelineId: string, scheduleId: string): Promise<Schedule> {
  const schedule = await findSchedule(db, scheduleId);
  if (!schedule || schedule.pipeline_id !== pipelineId) fail("not_found", "No schedule with that id on this pipeline.");
  return schedule;
}

/** 409 for a schedule the pipeline file defines: the next push of the file would undo an edit made here. */
export function refuseFileSchedule(schedule: Schedule): void {
  if (schedule.source === "file") {
    fail(
      "schedule_from_file",
      `This schedule is defined in ${schedule.config_path ?? "the pipeline file"}; change its schedules there and push to the default branch.`,
    );
  }
}

export const endpoint = defineEndpoint({
  operationId: "update_schedule",
  summary: "Update a build schedule",
  params: z.object({ schedule_id: IdParam }),
  body: UpdateScheduleBody,
  response: z.object({ schedule: ScheduleResource }),
  errors: ["schedule_from_file"],
  async handle({ params, body }, ctx: ProjectContext<"pipeline_id">) {
    const current = await scheduleOfPipeline(ctx.db, ctx.pipeline.id, params.schedule_id);
    refuseFileSchedule(current);
    const changes = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
    const schedule = await updateSchedule(ctx.db, current, changes, ctx.clock.now());
    return { schedule: toPublicSchedule(schedule, await lastRun(ctx.db, schedule.id)) };
  },
});
