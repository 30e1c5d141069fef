// How projects and their members look on the wire (docs/api.md "Projects"). The OpenAPI document is generated from these.
import { z } from "zod";
import { Timestamp, boundedJsonObject } from "../schemas/shared.ts";

export const ProjectRoleSchema = z.enum(["maintainer", "developer", "viewer"]);

export const ProjectResource = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  default_branch: z.string(),
  created_at: Timestamp,
  updated_at: Timestamp,
  created_by: z.string(),
  current_user_role: ProjectRoleSchema,
  repository_id: z.string(),
  repository_full_name: z.string(),
  repository_avatar_url: z.string(),
  repository_provider: z.string().nullable(),
  settings: z.record(z.string(), z.unknown()),
});

export const MemberResource = z.object({ user_id: z.string(), email: z.string(), role: ProjectRoleSchema, created_at: Timestamp });

/** Free-form project settings: a JSON object of at most 64 keys, 16 levels deep, 16 KiB serialized. */
export const ProjectSettings = boundedJsonObject({ maxKeys: 64, maxDepth: 16, maxBytes: 16_384 });
