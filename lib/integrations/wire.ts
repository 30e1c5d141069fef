// How integrations and their repository catalogue look on the wire (docs/api.md "Source integrations").
import { z } from "zod";
import { FORGE_NAMES } from "../forges/registry.ts";
import { Timestamp } from "../schemas/shared.ts";

export const RepositoryResource = z.object({
  id: z.string(),
  external_id: z.string().describe("the repository's id at the host"),
  full_name: z.string(),
  default_branch: z.string(),
  is_private: z.boolean(),
  avatar_url: z.string(),
  installation_id: z.string(),
  integration_id: z.string(),
  host_url: z.string(),
  clone_url: z.string(),
  provider: z.enum(FORGE_NAMES),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const IntegrationResource = z.object({
  id: z.string(),
  provider: z.enum(FORGE_NAMES),
  name: z.string(),
  api_url: z.string(),
  web_url: z.string(),
  app_id: z.string().nullable(),
  installation_id: z.string().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
  last_synced_at: Timestamp.nullable(),
  last_sync_error: z.string().nullable().describe("why the last sync failed (a status and a short reason); admins only, null for other roles"),
  last_sync_failed: z.boolean().describe("whether the last sync failed; shown to every role"),
});

export const SyncWarnings = z
  .array(z.string())
  .describe(
    'why a listed repository was stored in part or left out, one sentence each, e.g. a default branch over 255 characters (docs/api.md "Source integrations"); at most 20, then one saying how many more; empty when every one was stored whole',
  );
