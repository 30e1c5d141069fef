// How a stored pipeline configuration and a build's snapshot read back and show through the API.
// Apart from lib/pipelines/config.ts, whose zod schemas (the pipeline file's and every
// publisher's) the stores that read rows need not build: a daemon's start imports the stores,
// not the schemas (issue 20).
import type { ConfigSnapshot, ExecutionConfig, Platform, StoredEnvEntry } from "./config.ts";

/**
 * An execution config as read back from storage: pipelines and build snapshots stored before
 * platform_commands became lists hold a string (or nothing) per platform.
 */
export function normalizeExecutionConfig(config: ExecutionConfig): ExecutionConfig {
  const stored = (config.platform_commands ?? {}) as Partial<Record<Platform, string | string[]>>;
  const list = (v: string | string[] | undefined): string[] => (v === undefined ? [] : typeof v === "string" ? [v] : v);
  return { ...config, platform_commands: { android: list(stored.android), ios: list(stored.ios), macos: list(stored.macos) } };
}

/** The env as the API shows it: secret values are never returned. */
export function publicEnv(env: StoredEnvEntry[]): { key: string; value: string; secret: boolean }[] {
  return env.map((e) => ({ key: e.key, value: e.secret ? "" : e.value, secret: e.secret }));
}

/** The snapshot as the API shows it (inside a build). */
export function publicSnapshot(snapshot: ConfigSnapshot): ConfigSnapshot {
  const execution = normalizeExecutionConfig(snapshot.execution_config);
  return { ...snapshot, execution_config: { ...execution, env: publicEnv(execution.env) } };
}
