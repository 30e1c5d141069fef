// The delivery log's wire shape.
import { z } from "zod";
import { FORGE_NAMES } from "../forges/registry.ts";

export const DeliveryResource = z.object({
  id: z.string(),
  host: z.enum(FORGE_NAMES).describe("git: the generic push webhook or a poll of a plain git remote"),
  delivery_id: z
    .string()
    .describe("X-GitHub-Delivery, X-Gitlab-Event-UUID, X-Gitea-Delivery, the generic webhook's X-Roost-Delivery, or poll:<ref>@<commit> for a poll"),
  event: z.string(),
  action: z.string(),
  verified: z.boolean(),
  result: z.enum(["built", "ignored", "duplicate", "rejected", "failed"]),
  reason: z.string().describe("why, in a sentence"),
  repository_external_id: z.string().nullable(),
  repository_full_name: z.string().nullable(),
  repository_id: z.string().nullable(),
  project_id: z.string().nullable(),
  commit_sha: z.string().nullable(),
  decisions: z.array(
    z.object({
      pipeline_id: z.string(),
      pipeline_name: z.string(),
      build: z.boolean(),
      reason: z.string().describe('e.g. "branch feature/x not in [main, release/*]"'),
      build_id: z.string().optional(),
      build_number: z.number().int().optional(),
      file_problem: z
        .literal(true)
        .optional()
        .describe("present when the pipeline file this pipeline reads was invalid or unreadable at the commit; reason names the line and why"),
    }),
  ),
  duplicate_of: z.string().nullable(),
  received_at: z.number().int(),
});
