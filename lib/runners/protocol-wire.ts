// The runner protocol on the wire (docs/runners.md "Protocol"): one zod schema per request body
// and per answer, imported by both programs. The daemon's handlers validate requests with them
// (and the API document is generated from them); the runner parses every answer with them, so a
// field either side renames breaks the type check, not a build at run time.
//
// The runner reads answers leniently (unknown fields pass through): a newer daemon may add
// fields, and an older runner must keep working.
import { z } from "zod";
import { ClaimedPublish } from "../publishing/wire.ts";
import { DEFAULT_CACHE_KEY_FILES, DEFAULT_CACHE_PATHS, DEFAULT_TEST_REPORT_PATTERNS, DEFAULT_TIMEOUT_SECONDS } from "../pipelines/config.ts";

export const RunnerLabel = z.string().regex(/^[A-Za-z0-9_.:=-]{1,64}$/, "letters, digits and _.:=- (at most 64)");

/** Largest log append request (GitLab Runner and Woodpecker use the same 1 MiB). */
export const LOG_REQUEST_LIMIT = 1024 * 1024;

// POST /v1/runners/{runner_id}/connect
export const ConnectRequest = z
  .object({
    labels: z.array(RunnerLabel).max(20).default([]),
    capabilities: z
      .object({
        os: z.enum(["linux", "macos", "windows"]),
        arch: z.string().max(20),
        flutter_versions: z.array(z.string().max(40)).max(50).default([]),
        xcode: z.string().max(40).nullable().default(null),
      })
      .strict(),
    version: z.string().max(40).default(""),
  })
  .strict();
export const ConnectAnswer = z.object({
  heartbeat_seconds: z.number().int(),
  lease_seconds: z.number().int(),
  max_log_request_bytes: z.number().int(),
  daemon_uid: z
    .number()
    .int()
    .optional()
    .describe("the daemon's OS user id; only to a runner connecting from this host (its socket peer is loopback or one of this host's addresses)"),
});

// POST /v1/runners/{runner_id}/jobs/claim
export const ClaimRequest = z
  .object({
    claim_id: z.string().min(8).max(64).describe("unique per claim attempt; retrying with the same id returns the same job"),
    wait_seconds: z.number().int().min(0).max(30).default(25),
    accepts: z
      .array(z.enum(["build", "publish"]))
      .min(1)
      .max(2)
      .default(["build"])
      .describe("what this runner can run: builds, and publishes (docs/publishing.md); a runner that does not say gets builds only"),
  })
  .strict();

const CLAIM_FIELDS: ReadonlySet<string> = new Set(["claim_id", "wait_seconds", "accepts"]);

/**
 * A claim as ClaimRequest parses it, when it plainly fits the schema (what the runner sends),
 * checked field by field without zod, as plainLogBatch checks a log batch; null for anything
 * else, which the schema then parses and words the refusal of. The body's own object, with its
 * defaults filled in.
 */
export function plainClaim(value: unknown): z.output<typeof ClaimRequest> | null {
  if (!isPlainObject(value)) return null;
  for (const field in value) if (!CLAIM_FIELDS.has(field)) return null;
  const { claim_id, wait_seconds, accepts } = value;
  if (typeof claim_id !== "string" || claim_id.length < 8 || claim_id.length > 64) return null;
  if (wait_seconds !== undefined && (!Number.isSafeInteger(wait_seconds) || (wait_seconds as number) < 0 || (wait_seconds as number) > 30)) return null;
  if (accepts !== undefined && (!Array.isArray(accepts) || accepts.length < 1 || accepts.length > 2 || !accepts.every((a) => a === "build" || a === "publish")))
    return null;
  value.wait_seconds ??= 25;
  value.accepts ??= ["build"];
  return value as z.output<typeof ClaimRequest>;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const platformCommands = z
  .union([z.string().transform((c) => [c]), z.array(z.string())])
  .optional()
  .transform((c) => c ?? [])
  .describe("a list of commands; builds frozen before lists hold one string");

/** The frozen configuration a job runs, with secret env values revealed for the runner only. */
export const JobConfig = z.looseObject({
  pipeline_name: z.string(),
  execution_config: z.looseObject({
    artifact_patterns: z.array(z.string()),
    commands: z.object({ pre_build: z.array(z.string()), build: z.array(z.string()), post_build: z.array(z.string()) }),
    env: z.array(z.object({ key: z.string(), value: z.string(), secret: z.boolean() })),
    flutter_version: z.string(),
    platform_build_args: z.looseObject({ android: z.array(z.string()).optional(), ios: z.array(z.string()).optional(), macos: z.array(z.string()).optional() }),
    platform_commands: z
      .looseObject({ android: platformCommands, ios: platformCommands, macos: platformCommands })
      .default({ android: [], ios: [], macos: [] }),
    platforms: z.array(z.enum(["android", "ios", "macos"])),
    // Builds frozen before timeouts and caches existed get the defaults.
    timeout_seconds: z.number().int().default(DEFAULT_TIMEOUT_SECONDS),
    step_timeout_seconds: z.record(z.string(), z.number().int()).default({}),
    cache: z
      .object({ enabled: z.boolean(), paths: z.array(z.string()), key_files: z.array(z.string()) })
      .default({ enabled: true, paths: DEFAULT_CACHE_PATHS, key_files: DEFAULT_CACHE_KEY_FILES }),
    test_reports: z.array(z.string()).default(DEFAULT_TEST_REPORT_PATTERNS),
    // A container runner's (runner/executors/container.ts); absent in builds frozen before them.
    image: z.string().nullable().optional(),
    network: z.enum(["default", "none"]).optional(),
    limits: z
      .object({ cpus: z.number().nullable(), memory_mb: z.number().int().nullable(), pids: z.number().int().nullable(), disk_mb: z.number().int().nullable() })
      .partial()
      .optional(),
    registry_credentials: z.string().optional(),
    services: z
      .array(z.object({ image: z.string(), alias: z.string(), env: z.record(z.string(), z.string()).default({}), command: z.array(z.string()).optional() }))
      .default([]),
  }),
});

export const JobBuild = z.object({
  id: z.string(),
  build_number: z.number().int(),
  project_id: z.string(),
  pipeline_id: z.string(),
  branch: z.string(),
  commit_sha: z.string(),
  trigger_type: z.string(),
  trigger_event: z.string(),
  trigger_ref: z.string(),
  repository_full_name: z.string(),
  clone_url: z.string(),
  default_branch: z.string().default("").describe("the project's default branch: a cache falls back to its newest one"),
});

export const ClaimedJob = z.object({
  job_id: z.string(),
  lease_seconds: z.number().int(),
  heartbeat_seconds: z.number().int(),
  next_line: z.number().int(),
  build: JobBuild,
  clone_credentials: z.object({ username: z.string(), password: z.string() }).nullable(),
  config: JobConfig,
  files: z
    .array(z.object({ key: z.string(), content_base64: z.string(), secret: z.boolean() }))
    .default([])
    .describe("file variables: the runner writes each to a private file (0600) and sets its key to the path; removed when the job ends"),
  withheld_secrets: z.array(z.string()).default([]).describe("keys of secrets this build does not receive (a fork pull request, or protected_refs)"),
  withheld_reason: z.string().nullable().default(null),
  registry_auth: z
    .object({ key: z.string(), content: z.string() })
    .nullable()
    .default(null)
    .describe(
      "the registry auth file registry_credentials names: the runner hands it to the engine for pulls only (a 0600 file removed after), never to a step",
    ),
  registry_auth_problem: z.string().nullable().default(null).describe("why registry_credentials gives no auth file: the build fails with it"),
  shared_caches: z
    .boolean()
    .default(false)
    .describe("dependency caches are shared through the daemon (its object store is S3): restore from and save to /caches, not only the runner's disk"),
});
export type ClaimedJob = z.output<typeof ClaimedJob>;
/** A build's job, or (for a runner that accepts publishes) a deployment to publish (lib/publishing/wire.ts). */
export const ClaimAnswer = z.object({ job: ClaimedJob.optional(), publish: ClaimedPublish.optional() });

// POST /v1/runners/{runner_id}/heartbeat
export const HeartbeatRequest = z.object({ job_ids: z.array(z.string().min(1).max(64)).max(50).default([]) }).strict();
export const HeartbeatAnswer = z.object({
  renewed: z.array(z.string()),
  cancel: z.array(z.string()).describe("jobs to stop: their build is no longer running"),
  lease_seconds: z.number().int(),
});

// PUT /v1/runners/{runner_id}/jobs/{job_id}/steps/{step}
export const StepName = z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/);
export const StepReport = z
  .object({
    status: z.enum(["running", "succeeded", "failed", "canceled", "skipped"]),
    exit_code: z.number().int().nullable().default(null),
    started_at: z.number().int(),
    finished_at: z.number().int().nullable().default(null),
    duration_ms: z.number().int().min(0).default(0),
  })
  .strict();
export type StepReport = z.input<typeof StepReport>;

// POST /v1/runners/{runner_id}/jobs/{job_id}/logs
export const LogLine = z
  .object({
    step: z.string().max(100).default(""),
    stream: z.enum(["stdout", "stderr", "system"]).default("stdout"),
    ts: z.number().int().optional().describe("Unix seconds; default: when Roost received it"),
    text: z.string().max(65_536, "a line is at most 64 KiB; split longer output"),
  })
  .strict();
export const LogAppendRequest = z.object({ first_line: z.number().int().min(0), lines: z.array(LogLine).max(10_000) }).strict();

const LOG_STREAMS: ReadonlySet<unknown> = new Set(["stdout", "stderr", "system"]);
const LOG_LINE_FIELDS: ReadonlySet<string> = new Set(["step", "stream", "ts", "text"]);

/**
 * A log batch as LogAppendRequest parses it, when it plainly fits the schema (every batch a runner
 * sends), checked field by field without zod, which was about a tenth of the daemon's CPU under
 * log ingest; null for anything else, which the schema then parses and words the refusal of. The
 * lines are the body's own objects with their defaults filled in.
 */
export function plainLogBatch(value: unknown): z.output<typeof LogAppendRequest> | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const batch = value as Record<string, unknown>;
  const { first_line, lines } = batch;
  if (Object.keys(batch).length !== 2 || !Number.isSafeInteger(first_line) || (first_line as number) < 0) return null;
  if (!Array.isArray(lines) || lines.length > 10_000) return null;
  for (const line of lines as unknown[]) {
    if (typeof line !== "object" || line === null || Array.isArray(line)) return null;
    const l = line as Record<string, unknown>;
    for (const field in l) if (!LOG_LINE_FIELDS.has(field)) return null;
    if (typeof l.text !== "string" || l.text.length > 65_536) return null;
    if (l.step === undefined) l.step = "";
    else if (typeof l.step !== "string" || l.step.length > 100) return null;
    if (l.stream === undefined) l.stream = "stdout";
    else if (!LOG_STREAMS.has(l.stream)) return null;
    if (l.ts !== undefined && !Number.isSafeInteger(l.ts)) return null;
  }
  return batch as z.output<typeof LogAppendRequest>;
}
export const LogAppendAnswer = z.object({ next_line: z.number().int(), last_seq: z.number().int(), accepted: z.number().int() });
// A 416 log_gap answer carries next_line in X-Roost-Log-Next-Line, which the runner reads.

/** Which Flutter SDK a build used, as the runner reports it and the build shows it. */
export const FlutterSdkUsed = z
  .object({
    requested: z.string().max(40).describe("the pipeline's flutter_version, or what .fvmrc names"),
    version: z.string().max(200).describe("what `flutter --version` reported, or the requested version"),
    source: z
      .enum(["installed", "reused", "path", "sdks_dir", "image"])
      .describe(
        "installed for this build from the Flutter git repository, reused from an earlier install, the flutter on PATH, ROOST_FLUTTER_SDKS, or the build container's image",
      ),
    revision: z.string().max(64).nullable().describe("the SDK's git commit, when it is a git checkout"),
  })
  .strict();
export type FlutterSdkUsed = z.output<typeof FlutterSdkUsed>;

/** Where a build ran, as the runner reports it and the build shows it (docs/runners.md "Executors"). */
export const ExecutorUsed = z
  .object({
    kind: z.enum(["host", "container"]).describe("host: as the runner's OS user on its host; container: in a fresh container"),
    engine: z.string().max(100).nullable().describe("the container engine and its version, e.g. podman 4.3.1"),
    image: z.string().max(300).nullable().describe("the image as the pipeline or the runner named it"),
    image_digest: z.string().max(400).nullable().describe("the image the build ran, by digest (repository@sha256:…): a re-run runs this one"),
    network: z.enum(["default", "none"]).nullable(),
    limits: z
      .object({ cpus: z.number().nullable(), memory_mb: z.number().int().nullable(), pids: z.number().int().nullable(), disk_mb: z.number().int().nullable() })
      .nullable()
      .describe("the limits the build's container had; null is unlimited"),
    error: z.string().max(500).nullable().describe("why the build's container could not start"),
  })
  .strict();
export type ExecutorUsed = z.output<typeof ExecutorUsed>;

// POST /v1/runners/{runner_id}/jobs/{job_id}/finish
export const FinishRequest = z
  .object({
    status: z.enum(["succeeded", "failed", "canceled"]),
    exit_code: z.number().int(),
    failure_reason: z.string().max(500).optional(),
    flutter_sdk: FlutterSdkUsed.optional().describe("the Flutter SDK the build ran with"),
    executor: ExecutorUsed.optional().describe("where the build ran: its executor, and in a container its image by digest and limits"),
    line_count: z.number().int().min(0).describe("how many log lines the job produced in all"),
  })
  .strict();
export type FinishRequest = z.input<typeof FinishRequest>;

const FINISH_FIELDS: ReadonlySet<string> = new Set(["status", "exit_code", "failure_reason", "flutter_sdk", "executor", "line_count"]);
const FINISH_STATUSES: ReadonlySet<unknown> = new Set(["succeeded", "failed", "canceled"]);
const SDK_FIELDS: ReadonlySet<string> = new Set(["requested", "version", "source", "revision"]);
const SDK_SOURCES: ReadonlySet<unknown> = new Set(["installed", "reused", "path", "sdks_dir", "image"]);
const EXECUTOR_FIELDS: ReadonlySet<string> = new Set(["kind", "engine", "image", "image_digest", "network", "limits", "error"]);
const LIMIT_FIELDS: ReadonlySet<string> = new Set(["cpus", "memory_mb", "pids", "disk_mb"]);

/** A finish as FinishRequest parses it, when it plainly fits (plainClaim); null for the schema to parse. */
export function plainFinish(value: unknown): z.output<typeof FinishRequest> | null {
  if (!isPlainObject(value)) return null;
  for (const field in value) if (!FINISH_FIELDS.has(field)) return null;
  const { status, exit_code, failure_reason, flutter_sdk, executor, line_count } = value;
  if (!FINISH_STATUSES.has(status) || !Number.isSafeInteger(exit_code) || !Number.isSafeInteger(line_count) || (line_count as number) < 0) return null;
  if (failure_reason !== undefined && !text(failure_reason, 500)) return null;
  if (flutter_sdk !== undefined && !plainSdk(flutter_sdk)) return null;
  if (executor !== undefined && !plainExecutor(executor)) return null;
  return value as z.output<typeof FinishRequest>;
}

function text(value: unknown, max: number): boolean {
  return typeof value === "string" && value.length <= max;
}

function textOrNull(value: unknown, max: number): boolean {
  return value === null || text(value, max);
}

function plainSdk(value: unknown): boolean {
  if (!isPlainObject(value) || Object.keys(value).length !== SDK_FIELDS.size) return false;
  for (const field in value) if (!SDK_FIELDS.has(field)) return false;
  return text(value.requested, 40) && text(value.version, 200) && SDK_SOURCES.has(value.source) && textOrNull(value.revision, 64);
}

function plainExecutor(value: unknown): boolean {
  if (!isPlainObject(value) || Object.keys(value).length !== EXECUTOR_FIELDS.size) return false;
  for (const field in value) if (!EXECUTOR_FIELDS.has(field)) return false;
  const { kind, engine, image, image_digest, network, limits, error } = value;
  if ((kind !== "host" && kind !== "container") || (network !== null && network !== "default" && network !== "none")) return false;
  if (!textOrNull(engine, 100) || !textOrNull(image, 300) || !textOrNull(image_digest, 400) || !textOrNull(error, 500)) return false;
  if (limits === null) return true;
  if (!isPlainObject(limits) || Object.keys(limits).length !== LIMIT_FIELDS.size) return false;
  for (const field in limits) if (!LIMIT_FIELDS.has(field)) return false;
  const whole = (n: unknown) => n === null || Number.isSafeInteger(n);
  return (
    (limits.cpus === null || (typeof limits.cpus === "number" && Number.isFinite(limits.cpus))) &&
    whole(limits.memory_mb) &&
    whole(limits.pids) &&
    whole(limits.disk_mb)
  );
}

// POST /v1/runners/{runner_id}/jobs/{job_id}/release
export const ReleaseAnswer = z.object({ released: z.literal(true), build_status: z.literal("queued") });

// PUT /v1/runners/{runner_id}/jobs/{job_id}/artifacts?path=…
export const ArtifactResource = z.object({
  id: z.string(),
  build_id: z.string(),
  path: z.string().describe("relative to the workspace"),
  size: z.number().int(),
  sha256: z.string(),
  created_at: z.number().int(),
});
export const ArtifactAnswer = z.object({ artifact: ArtifactResource });

// GET|PUT /v1/runners/{runner_id}/jobs/{job_id}/caches (docs/runners.md "Shared caches")
export const CacheKey = z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, "letters, digits and ._- (at most 128)");
export const CacheVersion = z.string().regex(/^[0-9a-f]{8,64}$/, "8 to 64 lower-case hex digits");
export const CacheResource = z.object({
  id: z.string(),
  key: z.string(),
  version: z.string().describe("a hash of the cache paths and the platform: only an entry of the same version is restored"),
  scope: z.string().describe("the branch, tag:<tag> or pull_request:<ref> of the build that saved it"),
  pipeline_id: z.string(),
  size: z.number().int(),
  sha256: z.string(),
  created_at: z.number().int(),
  last_used_at: z.number().int(),
});
export const CacheLookupAnswer = z.object({
  cache: CacheResource.extend({ exact: z.boolean().describe("true: the key itself; false: the newest entry of a scope the build reads") }).nullable(),
});
export const CacheAnswer = z.object({ cache: CacheResource });

// PUT /v1/runners/{runner_id}/jobs/{job_id}/test-reports?path=…
/** The most of one test report a runner sends; the daemon reads no more (docs/test-results.md). */
export const TEST_REPORT_LIMIT = 32 * 1024 * 1024;
/** Test reports one build may upload; more are refused (the runner uploads at most this many). */
export const TEST_REPORTS_PER_BUILD = 100;
export const TestReportResource = z.object({
  id: z.string(),
  path: z.string().describe("relative to the checkout"),
  format: z.enum(["dart_json", "junit_xml", "lcov", "analyzer"]).nullable().describe("null: not recognised, not read"),
  status: z
    .enum(["read", "partial", "rejected"])
    .describe("read whole; partial: cut short, over a bound or partly malformed (problems say what); rejected: not read"),
  problems: z.array(z.string()).describe("sentences for the build: what was cut, dropped or malformed"),
  bytes: z.number().int().describe("bytes read"),
  cases: z.number().int().describe("test results kept from it"),
});
export const TestReportAnswer = z.object({ report: TestReportResource });

/** Every error answer of the API: {code, message} (validation adds details). */
export const ErrorAnswer = z.looseObject({ code: z.string(), message: z.string() });

/** Response headers of the protocol. */
export const HEADER = {
  jobStatus: "x-roost-job-status",
  logNextLine: "x-roost-log-next-line",
  artifactSha256: "x-roost-artifact-sha256",
  cacheSha256: "x-roost-cache-sha256",
  /** The runner's absolute checkout path, removed from the paths a report names. */
  workspace: "x-roost-workspace",
  /** A test report's whole size when the runner sent only its first TEST_REPORT_LIMIT bytes. */
  reportBytes: "x-roost-report-bytes",
} as const;
