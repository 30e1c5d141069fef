// Request and response shapes of schedules, notifications, badges and retention (docs/api.md).
import { z } from "zod";
import { Timestamp } from "../schemas.ts";
import { BranchName } from "./ci.ts";
import { cronProblem, timezoneProblem } from "../schedules.ts";

export const CronExpression = z
  .string()
  .min(1)
  .max(200)
  .superRefine((value, ctx) => {
    const problem = cronProblem(value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  })
  .describe("standard five-field cron expression (minute hour day-of-month month day-of-week) or @hourly/@daily/@weekly/@monthly/@yearly");

export const TimeZone = z
  .string()
  .min(1)
  .max(64)
  .superRefine((value, ctx) => {
    const problem = timezoneProblem(value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  })
  .describe("IANA time zone the expression is read in");

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
