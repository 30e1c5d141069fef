// The query of the two build listings (per project, per pipeline).
import { z } from "zod";
import { Pagination } from "../schemas.ts";
import { BUILD_STATUSES } from "./state-machine.ts";

export const ListBuildsQuery = z.object({
  status: z.enum(BUILD_STATUSES).optional(),
  branch: z.string().max(255).optional(),
  trigger_type: z.enum(["manual", "rerun", "webhook", "schedule"]).optional(),
  ...Pagination,
});
