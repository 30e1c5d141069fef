// Request and response shapes of scheduled builds (docs/operations.md "Scheduled builds").
import { z } from "zod";
import { CronExpression, TimeZone } from "../pipelines/cron.ts";
import { BranchName } from "../pipelines/wire.ts";
import { Timestamp } from "../schemas/shared.ts";

export { CronExpression, TimeZone };

export const ScheduleRunResource = z.object({
  slot_at: Timestamp.describe("the slot this run fired for"),
  result: z.enum(["built", "unchanged", "failed"]),
  build_id: z.string().nullable(),
  commit_sha: z.string().nullable(),
  error: z.string().nullable(),
  created_at: Timestamp,
});

export const ScheduleResource = z.object({
  id: z.string(),
  pipeline_id: z.string(),
  cron: z.string(),
  timezone: z.string(),
  branch: z.string(),
  build_when_unchanged: z.boolean().describe("false: a slot whose branch head is the commit of the last scheduled build builds nothing"),
  enabled: z.boolean(),
  source: z.enum(["api", "file"]).describe("file: defined in the pipeline file's `schedules` on the default branch and read-only here (change the file)"),
  config_path: z.string().nullable().describe("the pipeline file a file schedule comes from; null for api"),
  next_run_at: Timestamp.nullable().describe("null when disabled or the expression never fires again"),
  last_run: ScheduleRunResource.nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const CreateScheduleBody = z
  .object({
    cron: CronExpression,
    timezone: TimeZone.default("UTC"),
    branch: BranchName.optional().describe("default: the project's default branch"),
    build_when_unchanged: z.boolean().default(true),
    enabled: z.boolean().default(true),
  })
  .strict();

export const UpdateScheduleBody = z
  .object({
    cron: CronExpression.optional(),
    timezone: TimeZone.optional(),
    branch: BranchName.optional(),
    build_when_unchanged: z.boolean().optional(),
    enabled: z.boolean().optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, { message: "send at least one field to change" });
