// How an operator incident looks on the wire (docs/api.md "Operator incidents").
import { z } from "zod";
import { Timestamp } from "../schemas/shared.ts";

export const IncidentResource = z.object({
  id: z.string(),
  severity: z.enum(["info", "warning", "critical"]),
  status: z.enum(["open", "resolved"]),
  reason: z.string(),
  message: z.string(),
  repair_action: z.string(),
  repair_url: z.string(),
  resource_id: z.string(),
  resource_kind: z.string(),
  resource_name: z.string(),
  first_occurrence_at: Timestamp,
  latest_occurrence_at: Timestamp,
  occurrence_count: z.number().int(),
  read_at: Timestamp.nullable(),
  resolved_at: Timestamp.nullable(),
});
