// Turning a validated POST/PATCH body into the stored pipeline fields: defaults that depend on
// the project (branches default to its default branch), config_path_explicit, and secret env
// values sealed (or kept, when a secret entry is sent without a value).
import { z } from "zod";
import type { SecretBox } from "../crypto/secret-box.ts";
import type { Pipeline, PipelineFields } from "../db/pipelines.ts";
import { ConcurrencyInput, DEFAULT_CONFIG_PATH, ExecutionConfigInput, TriggerConfigInput, storeEnv, type ExecutionConfig } from "./config.ts";

export interface PipelineInput {
  name?: string;
  enabled?: boolean;
  config_path?: string;
  concurrency?: z.output<typeof ConcurrencyInput>;
  trigger_config?: z.output<typeof TriggerConfigInput>;
  execution_config?: z.output<typeof ExecutionConfigInput>;
}

/**
 * Fields for a new pipeline (previous = null) or the replacement of an existing one: every
 * top-level object sent replaces the stored one as a whole; objects not sent are kept.
 * Returns a sentence for a 400 when the input cannot be stored.
 */
export async function pipelineFields(
  input: PipelineInput,
  previous: Pipeline | null,
  projectDefaultBranch: string,
  secrets: SecretBox,
): Promise<PipelineFields | string> {
  const trigger = input.trigger_config ?? (previous ? undefined : TriggerConfigInput.parse({}));
  const execution = input.execution_config ?? (previous ? undefined : ExecutionConfigInput.parse({}));
  let executionConfig: ExecutionConfig;
  if (execution) {
    const env = await storeEnv(execution.env, previous?.execution_config.env ?? [], secrets);
    if (typeof env === "string") return env;
    executionConfig = { ...execution, env, platform_commands: execution.platform_commands };
  } else executionConfig = previous!.execution_config;
  return {
    name: input.name ?? previous!.name,
    enabled: input.enabled ?? previous?.enabled ?? true,
    config_path: input.config_path ?? previous?.config_path ?? DEFAULT_CONFIG_PATH,
    config_path_explicit: input.config_path !== undefined ? true : (previous?.config_path_explicit ?? false),
    concurrency: input.concurrency ?? previous?.concurrency ?? ConcurrencyInput.parse({}),
    trigger_config: trigger ? { branches: trigger.branches ?? [projectDefaultBranch], events: trigger.events } : previous!.trigger_config,
    execution_config: executionConfig,
  };
}
