// Turning a validated POST body, or a stored pipeline with a PATCH merged in, into the stored
// pipeline fields: defaults that depend on the project (branches default to its default branch),
// config_path_explicit, and secret env values sealed (or kept, when a secret entry is sent without a value).
import { z } from "zod";
import type { SecretBox } from "../crypto/secret-box.ts";
import type { Pipeline, PipelineFields } from "./store.ts";
import { ConcurrencyInput, DEFAULT_CONFIG_PATH, ExecutionConfigInput, TriggerConfigInput, storeEnv, type StoredEnvEntry } from "./config.ts";

export interface PipelineInput {
  name?: string;
  enabled?: boolean;
  config_path?: string;
  concurrency?: z.output<typeof ConcurrencyInput>;
  trigger_config?: z.output<typeof TriggerConfigInput>;
  execution_config?: z.output<typeof ExecutionConfigInput>;
}

/**
 * The stored fields of a pipeline from a whole document (a POST body, or the stored pipeline with
 * a PATCH merged in): anything not given takes its documented default. A secret env entry sent
 * without a value keeps the value stored under its key in `previousEnv`.
 * Returns a sentence for a 400 when the input cannot be stored.
 */
export async function pipelineFields(
  input: PipelineInput & { name: string },
  previousEnv: StoredEnvEntry[],
  projectDefaultBranch: string,
  secrets: SecretBox,
): Promise<PipelineFields | string> {
  const trigger = input.trigger_config ?? TriggerConfigInput.parse({});
  const execution = input.execution_config ?? ExecutionConfigInput.parse({});
  const env = await storeEnv(execution.env, previousEnv, secrets);
  if (typeof env === "string") return env;
  return {
    name: input.name,
    enabled: input.enabled ?? true,
    config_path: input.config_path ?? DEFAULT_CONFIG_PATH,
    config_path_explicit: input.config_path !== undefined,
    concurrency: input.concurrency ?? ConcurrencyInput.parse({}),
    trigger_config: { branches: trigger.branches ?? [projectDefaultBranch], events: trigger.events },
    execution_config: { ...execution, env },
  };
}

/**
 * A stored pipeline as the document a PATCH merges into (RFC 7396): what a client would send to
 * recreate it. Secret env entries carry no value (so they keep theirs), and config_path appears
 * only when a user set it, so a defaulted path stays a default.
 */
export function pipelineDocument(p: Pipeline): Record<string, unknown> {
  const { env, ...execution } = p.execution_config;
  return {
    name: p.name,
    enabled: p.enabled,
    ...(p.config_path_explicit ? { config_path: p.config_path } : {}),
    concurrency: p.concurrency,
    trigger_config: p.trigger_config,
    execution_config: { ...execution, env: env.map((e) => (e.secret ? { key: e.key, secret: true } : { key: e.key, value: e.value, secret: false })) },
  };
}
