// GET /v1/pipelines/{pipeline_id}/schedules (project viewer): the pipeline's schedules with their last run.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { ScheduleResource } from "../../lib/schedules/wire.ts";
import { lastRun, listSchedules, toPublicSchedule } from "../../lib/schedules/schedules.ts";

export const endpoint = defineEndpoint({
  operationId: "list_schedules",
  summary: "List a pipeline's build schedules",
  response: z.object({ schedules: z.array(ScheduleResource) }),
  async handle(_input, ctx: ProjectContext<"pipeline_id">) {
    const schedules = await listSchedules(ctx.db, ctx.pipeline.id);
    return { schedules: await Promise.all(schedules.map(async (s) => toPublicSchedule(s, await lastRun(ctx.db, s.id)))) };
  },
});
