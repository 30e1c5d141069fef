// How pipelines look on the wire (docs/api.md "Pipelines"), and the branch names they take.
import { z } from "zod";
import { PipelineFieldsInput, PLATFORMS, TRIGGER_EVENTS } from "./config.ts";
import { DisplayName, Timestamp } from "../schemas/shared.ts";
import { BRANCH_NAME_CHARS } from "../schemas/patterns.ts";

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

/** A git branch name (git check-ref-format, simplified): no spaces, control characters, "..", "~^:?*[\". */
export const BranchName = z
  .string()
  .min(1)
  .max(BRANCH_NAME_CHARS)
  .regex(/^(?!\/|.*\/\/|.*\.\.|.*@\{|.*\/$|.*\.lock$)[^\s\p{Cc}~^:?*[\\]+$/u, "must be a valid branch name");

/** The whole pipeline as a client writes it: POST's body, and what PATCH's merge patch must make of the pipeline. */
export const PipelineDocument = z
  .object({
    name: DisplayName,
    enabled: PipelineFieldsInput.enabled.optional(),
    config_path: PipelineFieldsInput.config_path.optional(),
    concurrency: PipelineFieldsInput.concurrency.optional(),
    trigger_config: PipelineFieldsInput.trigger_config.optional(),
    execution_config: PipelineFieldsInput.execution_config.optional(),
  })
  .strict();
