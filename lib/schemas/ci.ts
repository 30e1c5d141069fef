// Wire schemas of the CI domain: what projects, pipelines, builds, repositories,
// integrations and incidents look like in responses. The OpenAPI document is generated from these.
import { z } from "zod";
import { Timestamp, boundedJsonObject } from "./shared.ts";
import { PLATFORMS, TRIGGER_EVENTS } from "../pipelines/config.ts";
import { BUILD_STATUSES } from "../builds/state-machine.ts";
import { ExecutorUsed, FlutterSdkUsed } from "../runners/protocol-wire.ts";
import { FORGE_NAMES } from "../forges/registry.ts";

export const ProjectRoleSchema = z.enum(["maintainer", "developer", "viewer"]);

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

const EnvEntryOut = z.object({ key: z.string(), value: z.string().describe("empty for secret entries"), secret: z.boolean() });
const Platform = z.enum(PLATFORMS);

export const ExecutionConfigOut = z.object({
  artifact_patterns: z.array(z.string()),
  commands: z.object({ pre_build: z.array(z.string()), build: z.array(z.string()), post_build: z.array(z.string()) }),
  env: z.array(EnvEntryOut),
  flutter_version: z.string(),
  platform_build_args: z.object({ android: z.array(z.string()), ios: z.array(z.string()), macos: z.array(z.string()) }),
  platform_commands: z
    .object({ android: z.array(z.string()), ios: z.array(z.string()), macos: z.array(z.string()) })
    .describe("commands that replace `flutter build …` per platform; empty: `flutter build`"),
  platforms: z.array(Platform),
  runner_labels: z.array(z.string()).optional(),
  // Absent in builds frozen before timeouts and caches existed.
  timeout_seconds: z.number().int().optional().describe("a build running longer fails with reason timeout"),
  step_timeout_seconds: z.record(z.string(), z.number().int()).optional().describe("seconds per step"),
  cache: z
    .object({ enabled: z.boolean(), paths: z.array(z.string()), key_files: z.array(z.string()) })
    .optional()
    .describe("the runner's dependency cache"),
  publish: z
    .array(z.looseObject({ type: z.string(), environment: z.string() }))
    .optional()
    .describe("publishers run after a successful build (docs/publishing.md); absent in builds frozen before publishing existed"),
  image: z.string().optional().describe('the container image of a container runner (docs/runners.md "Executors"); absent: the runner\'s --image'),
  network: z.enum(["default", "none"]).optional().describe("none: the build's container has no network"),
  limits: z
    .object({ cpus: z.number().optional(), memory_mb: z.number().int().optional(), pids: z.number().int().optional(), disk_mb: z.number().int().optional() })
    .optional()
    .describe("the build container's limits, within the runner's"),
  registry_credentials: z.string().optional().describe("the key of the secret variable holding the registry auth file images are pulled with"),
  services: z
    .array(z.object({ image: z.string(), alias: z.string(), env: z.record(z.string(), z.string()), command: z.array(z.string()).optional() }))
    .optional()
    .describe("service containers started before the steps in the build's network, reachable at their alias"),
});

export const Concurrency = z.object({ cancel_previous: z.boolean(), max_concurrent: z.number().int() });
export const TriggerConfigOut = z.object({ branches: z.array(z.string()), events: z.array(z.enum(TRIGGER_EVENTS)) });

export const PipelineResource = z.object({
  id: z.string(),
  project_id: z.string(),
  name: z.string(),
  enabled: z.boolean(),
  config_path: z.string(),
  config_path_explicit: z.boolean().describe("whether config_path was set by a user rather than defaulted"),
  concurrency: Concurrency,
  trigger_config: TriggerConfigOut,
  execution_config: ExecutionConfigOut,
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const StepResult = z.object({
  name: z.string(),
  status: z.enum(["running", "succeeded", "failed", "canceled", "skipped"]),
  exit_code: z.number().int().nullable(),
  duration_ms: z.number().int(),
  started_at: Timestamp,
  finished_at: Timestamp.nullable(),
});

export const BuildResource = z.object({
  id: z.string(),
  build_number: z.number().int().describe("per project, from 1, no gaps"),
  project_id: z.string(),
  pipeline_id: z.string(),
  runner_id: z.string().nullable(),
  source_build_id: z.string().nullable().describe("set on a re-run: the build it was cloned from"),
  branch: z.string(),
  commit_sha: z.string(),
  changelog: z.string(),
  config_snapshot: z
    .object({
      pipeline_name: z.string(),
      config_path: z.string(),
      concurrency: Concurrency,
      trigger_config: TriggerConfigOut,
      execution_config: ExecutionConfigOut,
    })
    .describe("the pipeline configuration frozen when the build was created"),
  definition_source: z
    .union([
      z.object({ source: z.literal("api") }),
      z.object({
        source: z.literal("file"),
        path: z.string(),
        commit_sha: z.string().describe("the commit the pipeline file was read at"),
        branch: z.string().optional().describe("for a pull request from a fork: the target branch whose file was used"),
      }),
    ])
    .describe("where config_snapshot came from: the pipeline file in the repository, or the pipeline as configured through the API (docs/pipelines.md)"),
  context: z.unknown().nullable().describe("trigger details: pull request number, delivery id, …"),
  runner_policy_block_reason: z.string().nullable().describe("why no runner can take this build (e.g. no macOS runner for ios)"),
  status: z.enum(BUILD_STATUSES),
  exit_code: z.number().int().nullable(),
  failure_reason: z.string().nullable(),
  queued_at: Timestamp,
  started_at: Timestamp.nullable(),
  finished_at: Timestamp.nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
  trigger_type: z.enum(["manual", "rerun", "webhook", "schedule"]),
  schedule_id: z.string().nullable().describe("the schedule that started this build (trigger_type schedule)"),
  trigger_event: z.string(),
  trigger_ref: z.string(),
  trigger_actor: z.string(),
  step_results: z.array(StepResult),
  logs_deleted_at: Timestamp.nullable().describe('when retention deleted the build\'s log (docs/operations.md "Retention"); null while it is kept'),
  artifacts_deleted_at: Timestamp.nullable().describe("when retention deleted the build's artifacts; null while they are kept"),
  flutter_sdk: FlutterSdkUsed.nullable().describe(
    'the Flutter SDK the build used, as its runner reported it when the job finished (docs/runners.md "Flutter versions")',
  ),
  executor: ExecutorUsed.nullable().describe(
    'where the build ran, as its runner reported it when the job finished: host, or a container with its image by digest (which a re-run runs again), network and limits, or why the container could not start (docs/runners.md "Executors")',
  ),
});

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

export const IdParam = z.string().min(1).max(64);

export const MemberResource = z.object({ user_id: z.string(), email: z.string(), role: ProjectRoleSchema, created_at: Timestamp });

/** A git branch name (git check-ref-format, simplified): no spaces, control characters, "..", "~^:?*[\". */
export const BranchName = z
  .string()
  .min(1)
  .max(255)
  .regex(/^(?!\/|.*\/\/|.*\.\.|.*@\{|.*\/$|.*\.lock$)[^\s\p{Cc}~^:?*[\\]+$/u, "must be a valid branch name");

/** Free-form project settings: a JSON object of at most 64 keys, 16 levels deep, 16 KiB serialized. */
export const ProjectSettings = boundedJsonObject({ maxKeys: 64, maxDepth: 16, maxBytes: 16_384 });
