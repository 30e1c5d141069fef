// Cron expressions and time zones of scheduled builds, validated the same way wherever a schedule
// is written: through the API (POST/PATCH /v1/pipelines/{id}/schedules) and in the pipeline file's
// `schedules` (docs/pipelines.md). Parsed by croner (https://croner.56k.guru); a time zone is an
// IANA name as the runtime's Intl knows it. A leaf module, so the file's schema can use it
// without importing the scheduler.
import { z } from "zod";
import { Cron } from "croner";
import { problemCheck } from "../schemas/patterns.ts";

/** Five fields (minute hour day-of-month month day-of-week) or a nickname such as @daily. */
export function cronProblem(expression: string): string | null {
  const trimmed = expression.trim();
  if (!trimmed.startsWith("@") && trimmed.split(/\s+/).length !== 5)
    return "must have five fields: minute hour day-of-month month day-of-week (or a nickname such as @daily)";
  try {
    new Cron(trimmed, { paused: true });
    return null;
  } catch (error) {
    return (error as Error).message.replace(/^CronPattern: /, "");
  }
}

export function timezoneProblem(timezone: string): string | null {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    return null;
  } catch {
    return "must be an IANA time zone name, e.g. UTC or Europe/Berlin";
  }
}

export const CronExpression = z
  .string()
  .min(1)
  .max(200)
  .superRefine(problemCheck(cronProblem))
  .describe("standard five-field cron expression (minute hour day-of-month month day-of-week) or @hourly/@daily/@weekly/@monthly/@yearly");

export const TimeZone = z.string().min(1).max(64).superRefine(problemCheck(timezoneProblem)).describe("IANA time zone the expression is read in");
