// The runner resource (admin API). The runner protocol's own shapes live in
// lib/runners/protocol-wire.ts, shared with the runner program; re-exported here for the admin handlers.
import { z } from "zod";
export { ArtifactResource, LOG_REQUEST_LIMIT, LogLine, RunnerLabel } from "./protocol-wire.ts";

export const RunnerResource = z.object({
  id: z.string(),
  name: z.string(),
  labels: z.array(z.string()).describe("set by an admin"),
  advertised_labels: z.array(z.string()).describe("sent by the runner when it connects"),
  all_labels: z.array(z.string()),
  capabilities: z.object({
    os: z.string().optional(),
    arch: z.string().optional(),
    flutter_versions: z.array(z.string()).optional(),
    xcode: z.string().nullable().optional(),
  }),
  version: z.string(),
  created_at: z.number().int(),
  last_seen_at: z.number().int().nullable(),
  revoked_at: z.number().int().nullable(),
});
