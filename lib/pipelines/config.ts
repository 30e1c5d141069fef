// A pipeline's configuration: the zod schemas that validate it, with the
// documented defaults and limits (docs/api.md "Pipelines"), and how secret env values are kept.
import { z } from "zod";
import { CheckoutGlob, PatternText } from "../schemas/patterns.ts";
import type { SecretBox } from "../crypto/secret-box.ts";
import { PublishList, type Publisher } from "../publishing/publishers.ts";

export const PLATFORMS = ["android", "ios", "macos"] as const;
export type Platform = (typeof PLATFORMS)[number];
export const TRIGGER_EVENTS = ["push", "pull_request", "tag"] as const;
export type TriggerEvent = (typeof TRIGGER_EVENTS)[number];

export const DEFAULT_CONFIG_PATH = "roost.yaml";
export const DEFAULT_FLUTTER_VERSION = "stable";
/** A build that runs longer fails with reason timeout (Codemagic's max_build_duration defaults to 60 minutes too). */
export const DEFAULT_TIMEOUT_SECONDS = 3600;
/** Steps a pipeline can give their own timeout (the runner's reported steps, runner/job/steps.ts). */
export const TIMED_STEPS = ["checkout", "pre_build", "build_android", "build_ios", "build_macos", "build", "post_build"] as const;
/**
 * What a build caches by default: the pub cache, Gradle's caches and wrapper downloads, and
 * CocoaPods' download cache (the runner points PUB_CACHE, GRADLE_USER_HOME and CP_HOME_DIR at a
 * per-job directory), keyed by the lock files that decide what those hold.
 */
export const DEFAULT_CACHE_PATHS = ["$PUB_CACHE", "$GRADLE_USER_HOME/caches", "$GRADLE_USER_HOME/wrapper", "$CP_HOME_DIR"];
export const DEFAULT_CACHE_KEY_FILES = ["**/pubspec.lock", "**/*.gradle", "**/*.gradle.kts", "**/gradle-wrapper.properties", "**/Podfile.lock"];
export const DEFAULT_ARTIFACT_PATTERNS = [
  "build/app/outputs/flutter-apk/*.apk",
  "build/app/outputs/bundle/**/*.aab",
  "build/ios/ipa/*.ipa",
  "build/macos/Build/Products/Release/*.app",
];

/**
 * Where a build's test reports are looked for by default (docs/test-results.md): Flutter's JSON
 * reporter written with `--file-reporter json:build/test-results/flutter.json`, JUnit XML under
 * build/test-results, the Android Gradle plugin's unit and instrumented test results (Flutter
 * puts the app's Gradle build directory at build/app), coverage/lcov.info of `flutter test
 * --coverage`, and `dart analyze --format=machine` written to build/analyze.txt.
 */
export const DEFAULT_TEST_REPORT_PATTERNS = [
  "build/test-results/**/*.{json,jsonl,xml}",
  "build/*/test-results/**/*.xml",
  "build/*/outputs/androidTest-results/**/*.xml",
  "coverage/lcov.info",
  "build/analyze.txt",
];

const SECRET_PURPOSE = "pipeline-env";

const shortText = (max: number) => z.string().max(max, `must be at most ${max} characters`);
const command = z.string().min(1, "must not be empty").max(4096, "must be at most 4096 characters");
const commandList = z.array(command).max(50, "at most 50 commands");

export const EnvEntryInput = z
  .object({
    key: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "must be a shell variable name (letters, digits, _; at most 128)")
      .refine((k) => !k.startsWith("ROOST_"), "ROOST_ variables are set by the runner"),
    value: shortText(16_384).optional().describe("required unless the entry is secret and already stored (keeps the stored value)"),
    secret: z.boolean().default(false).describe("secret values are encrypted at rest, never returned, and masked in logs"),
  })
  .strict();

/**
 * The most builds of one pipeline that may run at once: a fleet's worth. The claim does not read
 * the running builds, it compares a counter with the limit (lib/runners/jobs.ts), so a claim costs the
 * same with a limit of 1 or of MAX_CONCURRENT_LIMIT.
 */
export const MAX_CONCURRENT_LIMIT = 1000;

export const ConcurrencyInput = z
  .object({
    cancel_previous: z
      .boolean()
      .default(false)
      .describe("a newer push or pull-request build cancels older queued/running ones of the same branch or pull request"),
    max_concurrent: z
      .number()
      .int()
      .min(1)
      .max(MAX_CONCURRENT_LIMIT)
      .default(1)
      .describe(`running builds of this pipeline at once (1 to ${MAX_CONCURRENT_LIMIT}); more wait queued, oldest first`),
  })
  .strict();

export const TriggerConfigInput = z
  .object({
    branches: z.array(PatternText).max(50).optional().describe("branch patterns (docs/api.md); default: the project's default branch"),
    events: z
      .array(z.enum(TRIGGER_EVENTS))
      .max(3)
      .default(["push", "pull_request"])
      .refine((e) => new Set(e).size === e.length, "events must be unique"),
  })
  .strict();

// A path under one of the cache homes the runner sets, or relative to the checkout; never
// absolute or outside it.
const cachePath = z
  .string()
  .min(1)
  .max(255)
  .regex(
    /^(?:\$(?:PUB_CACHE|GRADLE_USER_HOME|CP_HOME_DIR)(?:\/[^\p{Cc}]*)?|(?!\/)(?!\$)[^\p{Cc}]+)$/u,
    "must start with $PUB_CACHE, $GRADLE_USER_HOME or $CP_HOME_DIR, or be relative to the checkout",
  )
  .refine((p) => !p.split("/").includes(".."), "must not contain ..");

export const CacheConfigInput = z
  .object({
    enabled: z.boolean().default(true),
    paths: z
      .array(cachePath)
      .min(1)
      .max(20)
      .default(DEFAULT_CACHE_PATHS)
      .describe("what is cached: $PUB_CACHE, $GRADLE_USER_HOME/…, $CP_HOME_DIR/… or paths relative to the checkout (e.g. ios/Pods)"),
    key_files: z
      .array(PatternText)
      .min(1)
      .max(20)
      .default(DEFAULT_CACHE_KEY_FILES)
      .describe("glob patterns of the files whose contents key the cache (lock files)"),
  })
  .strict();

// An artifact comes from inside the checkout (the runner also resolves links: docs/runners.md
// "Artifacts"), so a pattern may not start at / nor climb out with a .. segment, however it is
// spelled to a glob (\.\. or {..,x} are .. too).
const artifactPattern = PatternText.refine((p) => !p.replace(/\\/g, "").startsWith("/"), "must be relative to the checkout, not an absolute path").refine(
  (p) =>
    !p
      .replace(/\\/g, "")
      .split(/[/{},]/)
      .includes(".."),
  "must not contain .. (artifacts come only from inside the checkout)",
);

const platformArgs = z.array(shortText(1024)).max(50);
// A list like every other command field; a single string (the form before lists) is still
// accepted and read as a list of one command.
const platformCommands = z
  .union([command.transform((c) => [c]), commandList])
  .default([])
  .describe("a list of commands; a single string is accepted as a list of one");

// An image as engines name one ([registry[:port]/]path[:tag][@sha256:digest]); never starting
// with "-", so no image name can pass for an option of the engine's command line.
export const ImageReference = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._\/:-]*(?:@sha256:[a-f0-9]{64})?$/, "must be an image reference like ghcr.io/acme/flutter:3.27 or name@sha256:<64 hex digits>")
  .refine(
    (r) => !r.includes("//") && !r.endsWith("/") && !r.endsWith(":"),
    "must be an image reference like ghcr.io/acme/flutter:3.27 or name@sha256:<64 hex digits>",
  );

// A service container beside the build (docs/pipelines.md "Services"), as GitLab's `services:`
// and Woodpecker's `services:` offer: it shares the build container's network, so a step reaches
// it at its alias (or localhost) on the ports it listens on.
const ServiceAlias = z
  .string()
  .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, "must be a host name: lowercase letters, digits and '-' (at most 63)")
  .refine((a) => !["localhost", "roost-build"].includes(a), "localhost and roost-build are taken");

export const ServiceInput = z
  .object({
    image: ImageReference.describe("the service's image, e.g. postgres:16; pulled with registry_credentials when the pipeline has them"),
    alias: ServiceAlias.describe("the host name steps reach the service at (it resolves to the build's own loopback)"),
    env: z
      .record(
        z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "must be a shell variable name (letters, digits, _; at most 128)"),
        z
          .union([
            z
              .string()
              .max(4096, "must be at most 4096 characters")
              .regex(/^[^\n\r\0]*$/, "must be one line"),
            z.number(),
            z.boolean(),
          ])
          .transform(String),
      )
      .default({})
      .describe("the service's environment (plain values: the pipeline file is readable by everyone who reads the repository)"),
    command: z
      .array(shortText(1024))
      .min(1)
      .max(50)
      .optional()
      .describe("the arguments the image's entrypoint gets instead of its CMD, e.g. [redis-server, --port, '6380']"),
  })
  .strict();

export const LimitsInput = z
  .object({
    cpus: z.number().min(0.1).max(256).optional().describe("CPUs, e.g. 2 or 0.5"),
    memory_mb: z
      .number()
      .int()
      .min(16)
      .max(4_194_304)
      .optional()
      .describe("memory in MiB, no swap beyond it; a build past it fails saying it ran out of memory"),
    pids: z.number().int().min(16).max(1_000_000).optional().describe("processes and threads at once (default 4096)"),
    disk_mb: z.number().int().min(1).max(1_073_741_824).optional().describe("MiB the build may write into its workspace and cache directories"),
  })
  .strict();

export const ExecutionConfigInput = z
  .object({
    artifact_patterns: z.array(artifactPattern).max(50).default(DEFAULT_ARTIFACT_PATTERNS),
    commands: z
      .object({ pre_build: commandList.default([]), build: commandList.default([]), post_build: commandList.default([]) })
      .strict()
      .default({ pre_build: [], build: [], post_build: [] }),
    env: z
      .array(EnvEntryInput)
      .max(100)
      .default([])
      .refine((env) => new Set(env.map((e) => e.key)).size === env.length, "env keys must be unique"),
    flutter_version: z
      .string()
      .regex(/^(stable|beta|main|master|fvm|\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?)$/, "must be stable, beta, main, fvm (read from .fvmrc) or a version like 3.24.5")
      .default(DEFAULT_FLUTTER_VERSION),
    platform_build_args: z
      .object({ android: platformArgs.default([]), ios: platformArgs.default([]), macos: platformArgs.default([]) })
      .strict()
      .default({ android: [], ios: [], macos: [] }),
    platform_commands: z
      .object({ android: platformCommands, ios: platformCommands, macos: platformCommands })
      .strict()
      .default({ android: [], ios: [], macos: [] })
      .describe("commands that replace `flutter build …` for that platform; an empty list keeps `flutter build`"),
    platforms: z
      .array(z.enum(PLATFORMS))
      .max(3)
      .default(["android"])
      .refine((p) => new Set(p).size === p.length, "platforms must be unique")
      .describe(
        "the platforms built with `flutter build` (or platform_commands); [] builds none: a check pipeline that only runs its commands (analyze, test)",
      ),
    runner_labels: z
      .array(z.string().regex(/^[A-Za-z0-9_.:=-]{1,64}$/))
      .max(20)
      .default([])
      .describe("labels a runner must have to take this pipeline's builds (routing; docs/runners.md)"),
    timeout_seconds: z
      .number()
      .int()
      .min(1)
      .max(86_400)
      .default(DEFAULT_TIMEOUT_SECONDS)
      .describe('a build running longer is stopped like a cancel and fails with reason timeout (docs/runners.md "Timeouts")'),
    step_timeout_seconds: z
      .partialRecord(z.enum(TIMED_STEPS), z.number().int().min(1).max(86_400))
      .default({})
      .describe(
        "per step (checkout, pre_build, build_android, build_ios, build_macos, build, post_build): a step running longer fails the build with reason timeout",
      ),
    cache: CacheConfigInput.default({ enabled: true, paths: DEFAULT_CACHE_PATHS, key_files: DEFAULT_CACHE_KEY_FILES }),
    image: ImageReference.optional().describe(
      'the container image builds run in on a container runner (docs/runners.md "Executors"), e.g. ghcr.io/acme/flutter:3.27 or …@sha256:…; default: the runner\'s --image. A host runner ignores it',
    ),
    network: z
      .enum(["default", "none"])
      .optional()
      .describe("none: the build's container has no network at all (default: on, without the host's loopback or the cloud metadata address)"),
    limits: LimitsInput.optional().describe('the build container\'s limits; a runner lowers what is above its own (docs/runners.md "Limits")'),
    registry_credentials: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "must be the key of a secret variable of the project or pipeline")
      .optional()
      .describe(
        'the key of a secret variable (of the project or the pipeline) holding a registry auth file, {"auths": {"registry.example.com": {"auth": "<base64 of user:password>"}}} as GitLab\'s DOCKER_AUTH_CONFIG: the engine pulls image: and the services\' images with it. Never given to the build\'s steps',
      ),
    services: z
      .array(ServiceInput)
      .max(10)
      .optional()
      .refine((list) => !list || new Set(list.map((s) => s.alias)).size === list.length, "service aliases must be unique")
      .describe("containers started before the steps in the build's network (a container runner only), reachable at their alias; removed with the build"),
    test_reports: z
      .array(CheckoutGlob)
      .max(50)
      .default(DEFAULT_TEST_REPORT_PATTERNS)
      .describe(
        "glob patterns, relative to the checkout, of test reports read after the steps whether they passed or failed: the Dart JSON reporter's output, JUnit XML, lcov.info, dart analyze --format=machine (docs/test-results.md); [] reads none",
      ),
    publish: PublishList,
  })
  .strict();

/** A timeout as people write it: "90 s", "60 min". */
export function formatTimeout(seconds: number): string {
  return seconds % 60 === 0 ? `${seconds / 60} min` : `${seconds} s`;
}

/** An env entry as stored: a secret's value is sealed. */
export interface StoredEnvEntry {
  key: string;
  value: string;
  secret: boolean;
}

export interface TriggerConfig {
  branches: string[];
  events: TriggerEvent[];
}

export interface ExecutionConfig {
  artifact_patterns: string[];
  commands: { pre_build: string[]; build: string[]; post_build: string[] };
  env: StoredEnvEntry[];
  flutter_version: string;
  platform_build_args: Record<Platform, string[]>;
  platform_commands: Record<Platform, string[]>;
  platforms: Platform[];
  /** Absent in builds created before runner labels existed. */
  runner_labels?: string[];
  /** Absent in builds created before timeouts existed: DEFAULT_TIMEOUT_SECONDS. */
  timeout_seconds?: number;
  step_timeout_seconds?: Partial<Record<(typeof TIMED_STEPS)[number], number>>;
  /** Absent in builds created before caches existed: the defaults. */
  cache?: CacheConfig;
  /** A container runner's image, network and limits; absent when the pipeline sets none. */
  image?: string;
  network?: "default" | "none";
  limits?: { cpus?: number; memory_mb?: number; pids?: number; disk_mb?: number };
  /** The key of the secret variable the engine pulls images with (a container runner's). */
  registry_credentials?: string;
  /** Service containers beside the build (a container runner's). */
  services?: Service[];
  /** Absent in builds created before test reports existed: DEFAULT_TEST_REPORT_PATTERNS. */
  test_reports?: string[];
  /** Publishers run after a successful build (docs/publishing.md); absent in builds created before publishing existed. */
  publish?: Publisher[];
}

export type Service = z.output<typeof ServiceInput>;

export interface CacheConfig {
  enabled: boolean;
  paths: string[];
  key_files: string[];
}

export interface Concurrency {
  cancel_previous: boolean;
  max_concurrent: number;
}

/** What a build freezes at creation (its config_snapshot). Secret env values stay sealed in it. */
export interface ConfigSnapshot {
  pipeline_name: string;
  config_path: string;
  concurrency: Concurrency;
  trigger_config: TriggerConfig;
  execution_config: ExecutionConfig;
}

/**
 * Seals new secret values; an entry marked secret without a value keeps the value already stored
 * under that key (so a client can edit other fields without ever seeing the secret).
 * Returns an error sentence when a secret without a value has nothing stored to keep.
 */
export async function storeEnv(input: z.output<typeof EnvEntryInput>[], previous: StoredEnvEntry[], secrets: SecretBox): Promise<StoredEnvEntry[] | string> {
  const out: StoredEnvEntry[] = [];
  for (const entry of input) {
    if (entry.value === undefined) {
      const kept = previous.find((p) => p.key === entry.key && p.secret);
      if (!entry.secret || !kept) return `env ${entry.key}: a value is required`;
      out.push(kept);
    } else {
      out.push({ key: entry.key, value: entry.secret ? await secrets.seal(entry.value, SECRET_PURPOSE) : entry.value, secret: entry.secret });
    }
  }
  return out;
}

/** The env a runner receives for a build: secret values decrypted. */
export async function revealEnv(env: StoredEnvEntry[], secrets: SecretBox): Promise<StoredEnvEntry[]> {
  return Promise.all(env.map(async (e) => (e.secret ? { ...e, value: await secrets.open(e.value, SECRET_PURPOSE) } : e)));
}

/** The writable fields of a pipeline (POST and PATCH bodies share them). */
export const PipelineFieldsInput = {
  enabled: z.boolean().describe("a disabled pipeline is never triggered by webhooks (manual builds still work)"),
  config_path: z
    .string()
    .min(1)
    .max(255)
    .regex(/^(?!\/)(?!.*\.\.)[^\p{Cc}]+$/u, "must be a relative path inside the repository")
    .describe(`path of the pipeline file in the repository; default ${DEFAULT_CONFIG_PATH}`),
  concurrency: ConcurrencyInput,
  trigger_config: TriggerConfigInput,
  execution_config: ExecutionConfigInput,
};
