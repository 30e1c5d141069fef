// DELETE /v1/pipelines/{pipeline_id}/schedules/{schedule_id} (project maintainer). Builds it
// started stay; their schedule_id becomes null.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { deleteSchedule } from "../../lib/schedules/schedules.ts";
import { refuseFileSchedule, scheduleOfPipeline } from "./update.ts";

export const endpoint = defineEndpoint({
  operationId: "delete_schedule",
  summary: "Delete a build schedule",
  params: z.object({ schedule_id: IdParam }),
  response: z.object({ deleted: z.boolean() }),
  errors: ["schedule_from_file"],
  async handle({ params }, ctx: ProjectContext<"pipeline_id">) {
    const schedule = await scheduleOfPipeline(ctx.db, ctx.pipeline.id, params.schedule_id);
    refuseFileSchedule(schedule);
    await deleteSchedule(ctx.db, schedule.id);
    return { deleted: true };
  },
});
