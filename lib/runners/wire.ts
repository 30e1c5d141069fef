// Wire schemas of the runner protocol and the runner resource.
import { z } from "zod";

export const RunnerLabel = z.string().regex(/^[A-Za-z0-9_.:=-]{1,64}$/, "letters, digits and _.:=- (at most 64)");

export const RunnerResource = z.object({
  id: z.string(),
  name: z.string(),
  labels: z.array(z.string()).describe("set by an admin"),
  advertised_labels: z.array(z.string()).describe("sent by the runner when it connects"),
  all_labels: z.array(z.string()),
  capabilities: z.object({ os: z.string().optional(), arch: z.string().optional(), flutter_versions: z.array(z.string()).optional(), xcode: z.string().nullable().optional() }),
  version: z.string(),
  created_at: z.number().int(),
  last_seen_at: z.number().int().nullable(),
  revoked_at: z.number().int().nullable(),
});

export const LogLine = z
  .object({
    step: z.string().max(100).default(""),
    stream: z.enum(["stdout", "stderr", "system"]).default("stdout"),
    ts: z.number().int().optional().describe("Unix seconds; default: when Roost received it"),
    text: z.string().max(65_536, "a line is at most 64 KiB; split longer output"),
  })
  .strict();

/** Largest log append request (GitLab Runner and Woodpecker use the same 1 MiB). */
export const LOG_REQUEST_LIMIT = 1024 * 1024;

export const ArtifactResource = z.object({
  id: z.string(),
  build_id: z.string(),
  path: z.string().describe("relative to the workspace"),
  size: z.number().int(),
  sha256: z.string(),
  created_at: z.number().int(),
});
