// GET /v1/pipelines/{pipeline_id}/schedules/{schedule_id} (project viewer).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { ScheduleResource } from "../../lib/schedules/wire.ts";
import { lastRun, toPublicSchedule } from "../../lib/schedules/schedules.ts";
import { scheduleOfPipeline } from "./update.ts";

export const endpoint = defineEndpoint({
  operationId: "get_schedule",
  summary: "Read a build schedule",
  params: z.object({ schedule_id: IdParam }),
  response: z.object({ schedule: ScheduleResource }),
  async handle({ params }, ctx: ProjectContext<"pipeline_id">) {
    const schedule = await scheduleOfPipeline(ctx.db, ctx.pipeline.id, params.schedule_id);
    return { schedule: toPublicSchedule(schedule, await lastRun(ctx.db, schedule.id)) };
  },
});
