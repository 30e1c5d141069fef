// Configuration comes from ROOST_* environment variables, parsed once at start-up with zod.
// A bad value stops the daemon with a message naming the variable (README "Configuration").
import { resolve, join } from "node:path";
import { z } from "zod";
import { DATABASE_TIMEOUT_MS } from "../db/database.ts";

const hostPort = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, "must be host:port, e.g. 127.0.0.1:8080 or [::1]:8080")
  .refine((v) => Number(v.slice(v.lastIndexOf(":") + 1)) <= 65535, "port must be at most 65535");

/** A whole number from `min` to `max`, `fallback` when the variable is unset. */
const wholeNumber = (min: number, max: number, fallback: number) => z.coerce.number().int().min(min).max(max).default(fallback);

const EnvSchema = z
  .object({
    ROOST_LISTEN: hostPort.default("127.0.0.1:8080"),
    ROOST_DATA_DIR: z.string().min(1).default("./data"),
    ROOST_DATABASE_URL: z
      .string()
      .regex(/^(file:|libsql:|https?:|wss?:)/, "must be a libSQL URL (file:, libsql:, http(s): or ws(s):)")
      .optional(),
    ROOST_DATABASE_AUTH_TOKEN: z.string().min(1).optional(),
    ROOST_DATABASE_TIMEOUT_MS: wholeNumber(100, 600_000, DATABASE_TIMEOUT_MS),
    ROOST_LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
    ROOST_PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
    ROOST_MANAGEMENT_SOCKET: z.string().min(1).optional(),
    ROOST_RUNNER_HEARTBEAT_SECONDS: wholeNumber(1, 300, 10),
    ROOST_RUNNER_LEASE_SECONDS: wholeNumber(2, 3600, 45),
    ROOST_MAX_BUILD_LOG_BYTES: wholeNumber(1024, 1024 ** 3, 64 * 1024 * 1024),
    ROOST_MAX_ARTIFACT_BYTES: wholeNumber(1024, 16 * 1024 ** 3, 2 * 1024 ** 3),
    ROOST_METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
    ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL: z.enum(["true", "false"], "must be true or false").default("false"),
    ROOST_REQUEST_TIMEOUT_SECONDS: wholeNumber(1, 3600, 30),
    ROOST_GIT_POLL_INTERVAL_SECONDS: wholeNumber(1, 86_400, 60),
    ROOST_GIT_ALLOW_LOCAL_REMOTES: z.enum(["true", "false"], "must be true or false").default("false"),
    ROOST_LOG_RETENTION_DAYS: wholeNumber(0, 36_500, 90),
    ROOST_ARTIFACT_RETENTION_DAYS: wholeNumber(0, 36_500, 90),
    ROOST_KEEP_BUILDS: wholeNumber(0, 1_000_000, 0),
    ROOST_DATA_DIR_WARN_BYTES: z.coerce
      .number()
      .int()
      .min(0)
      .default(10 * 1024 ** 3),
    ROOST_OBJECT_STORE: z
      .string()
      .refine(
        (v) => v === "disk" || parseObjectStoreUrl(v) !== null,
        "must be disk or s3://<bucket>[/<prefix>][?endpoint=<url>&region=<region>&virtual_hosted=true]",
      )
      .default("disk"),
    ROOST_S3_ACCESS_KEY_ID: z.string().min(1).optional(),
    ROOST_S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
    ROOST_S3_SESSION_TOKEN: z.string().min(1).optional(),
    ROOST_S3_PRESIGN_SECONDS: wholeNumber(0, 604_800, 0),
    ROOST_SHARED_CACHE_DAYS: wholeNumber(1, 3650, 7),
    ROOST_SHARED_CACHE_MAX_MB: wholeNumber(1, 16 * 1024 * 1024, 10 * 1024),
    ROOST_SECRET_KEY: z
      .string()
      .regex(/^[A-Za-z0-9+/=_-]{43,}$/, "must be at least 32 random bytes, base64-encoded")
      .optional(),
  })
  .refine((e) => e.ROOST_OBJECT_STORE === "disk" || (e.ROOST_S3_ACCESS_KEY_ID && e.ROOST_S3_SECRET_ACCESS_KEY), {
    path: ["ROOST_OBJECT_STORE"],
    message: "an s3:// store needs ROOST_S3_ACCESS_KEY_ID and ROOST_S3_SECRET_ACCESS_KEY",
  })
  .refine((e) => e.ROOST_RUNNER_HEARTBEAT_SECONDS < e.ROOST_RUNNER_LEASE_SECONDS, {
    // A runner that beats only once per lease (or less often) loses its job between two heartbeats.
    path: ["ROOST_RUNNER_HEARTBEAT_SECONDS"],
    message: "must be shorter than ROOST_RUNNER_LEASE_SECONDS",
  });

/** Where artifacts live (lib/object-store/): the data directory, or an S3-compatible bucket (docs/operations.md "Object storage"). */
export type ObjectStoreConfig =
  | { kind: "disk" }
  | {
      kind: "s3";
      bucket: string;
      /** Prepended to every key ("" or ending in "/"), so several instances may share a bucket. */
      prefix: string;
      /** Absent: AWS S3 in `region`. */
      endpoint: string | undefined;
      region: string | undefined;
      virtualHostedStyle: boolean;
      accessKeyId: string;
      secretAccessKey: string;
      sessionToken: string | undefined;
      /** Downloads answer 302 to a URL presigned for this many seconds; 0 streams them through the daemon. */
      presignSeconds: number;
    };

/** `s3://bucket[/prefix][?endpoint=…&region=…&virtual_hosted=true]`, or null when it is not one. */
export function parseObjectStoreUrl(
  value: string,
): { bucket: string; prefix: string; endpoint: string | undefined; region: string | undefined; virtualHostedStyle: boolean } | null {
  const url = URL.parse(value);
  if (!url || url.protocol !== "s3:" || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(url.hostname) || url.username || url.password) return null;
  const endpoint = url.searchParams.get("endpoint") ?? undefined;
  if (endpoint !== undefined && !/^https?:$/.test(URL.parse(endpoint)?.protocol ?? "")) return null;
  const known = new Set(["endpoint", "region", "virtual_hosted"]);
  if ([...url.searchParams.keys()].some((k) => !known.has(k))) return null;
  const path = decodeURIComponent(url.pathname).replace(/^\/+|\/+$/g, "");
  return {
    bucket: url.hostname,
    prefix: path ? `${path}/` : "",
    endpoint,
    region: url.searchParams.get("region") ?? undefined,
    virtualHostedStyle: url.searchParams.get("virtual_hosted") === "true",
  };
}

export interface Config {
  listen: { hostname: string; port: number };
  dataDir: string;
  databaseUrl: string;
  databaseAuthToken: string | undefined;
  /** How long a request to a remote database server may go unanswered (then 503 database_unavailable). */
  databaseTimeoutMs: number;
  logLevel: "debug" | "info" | "warn" | "error";
  publicUrl: string | undefined;
  managementSocketPath: string;
  secretKey: string | undefined;
  objectStore: ObjectStoreConfig;
  /** Bearer token Prometheus presents to GET /metrics; without it, /metrics answers loopback peers only. */
  metricsToken: string | undefined;
  /** Seconds a client has to send a request's head, then its body (docs/operations.md "Malformed and slow requests"). */
  requestTimeoutSeconds: number;
  integrations: {
    /** Whether an integration's api_url may be, or resolve to, a link-local or cloud metadata address. */
    allowLinkLocal: boolean;
    /** How often each plain git remote is read with git ls-remote (docs/any-git.md). */
    gitPollIntervalSeconds: number;
    /** Whether a plain git integration may name a path or file:// URL on this machine. */
    allowLocalGitRemotes: boolean;
  };
  runners: {
    /** How often a runner should send heartbeats. */
    heartbeatSeconds: number;
    /** A job whose runner is silent this long is lost: its build fails and an incident is raised. */
    leaseSeconds: number;
    /** Per-build log cap: the head and the tail are kept, what lies between is cut (and says so). */
    maxBuildLogBytes: number;
    /** Largest artifact a runner may upload. */
    maxArtifactBytes: number;
  };
  /**
   * Dependency caches shared by every runner of a project (docs/runners.md "Shared caches"): on
   * when the object store is S3 (several hosts); with the disk store each runner keeps its own.
   */
  sharedCaches: {
    /** An entry no build restored for this many days is deleted with its archive. */
    unusedDays: number;
    /** Per project, the least recently used entries are deleted once all of them exceed this; also the largest one archive. */
    maxBytesPerProject: number;
  };
  /** Instance defaults for how long finished builds keep their logs and artifacts (0: no limit); a project may override each (docs/operations.md "Retention"). */
  retention: {
    logDays: number;
    artifactDays: number;
    /** Per pipeline, the newest this many builds keep logs and artifacts. */
    keepBuilds: number;
    /** An operator incident warns when the data directory holds more than this while retention is off for some project (0: never). */
    warnDataDirBytes: number;
  };
}

export class ConfigError extends Error {}

export function parseListen(value: string): { hostname: string; port: number } {
  const at = value.lastIndexOf(":");
  let hostname = value.slice(0, at);
  if (hostname.startsWith("[")) hostname = hostname.slice(1, -1);
  return { hostname, port: Number(value.slice(at + 1)) };
}

export function loadConfig(env: Record<string, string | undefined>): Config {
  // Parsed once: zod's compiled fast path (generated with new Function on an object schema's first
  // parse) would cost more to build than it saves, and its code would stay in the daemon's memory
  // (first parse 2.5 ms instead of 11 ms from a checkout; docs/benchmarks.md, "idle RSS").
  const result = EnvSchema.safeParse(env, { jitless: true });
  if (!result.success) {
    // One line, naming every variable at fault: start-up problems are told in one line (exit 2).
    const causes = result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
    throw new ConfigError(`invalid configuration: ${causes.join("; ")}`);
  }
  const e = result.data;
  const dataDir = resolve(e.ROOST_DATA_DIR);
  return {
    listen: parseListen(e.ROOST_LISTEN),
    dataDir,
    databaseUrl: e.ROOST_DATABASE_URL ?? `file:${join(dataDir, "roost.db")}`,
    databaseAuthToken: e.ROOST_DATABASE_AUTH_TOKEN,
    databaseTimeoutMs: e.ROOST_DATABASE_TIMEOUT_MS,
    logLevel: e.ROOST_LOG_LEVEL,
    publicUrl: e.ROOST_PUBLIC_URL?.replace(/\/+$/, ""),
    managementSocketPath: e.ROOST_MANAGEMENT_SOCKET ? resolve(e.ROOST_MANAGEMENT_SOCKET) : join(dataDir, "roost.sock"),
    secretKey: e.ROOST_SECRET_KEY,
    objectStore:
      e.ROOST_OBJECT_STORE === "disk"
        ? { kind: "disk" }
        : {
            kind: "s3",
            ...parseObjectStoreUrl(e.ROOST_OBJECT_STORE)!,
            accessKeyId: e.ROOST_S3_ACCESS_KEY_ID!,
            secretAccessKey: e.ROOST_S3_SECRET_ACCESS_KEY!,
            sessionToken: e.ROOST_S3_SESSION_TOKEN,
            presignSeconds: e.ROOST_S3_PRESIGN_SECONDS,
          },
    metricsToken: e.ROOST_METRICS_TOKEN,
    requestTimeoutSeconds: e.ROOST_REQUEST_TIMEOUT_SECONDS,
    integrations: {
      allowLinkLocal: e.ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL === "true",
      gitPollIntervalSeconds: e.ROOST_GIT_POLL_INTERVAL_SECONDS,
      allowLocalGitRemotes: e.ROOST_GIT_ALLOW_LOCAL_REMOTES === "true",
    },
    runners: {
      heartbeatSeconds: e.ROOST_RUNNER_HEARTBEAT_SECONDS,
      leaseSeconds: e.ROOST_RUNNER_LEASE_SECONDS,
      maxBuildLogBytes: e.ROOST_MAX_BUILD_LOG_BYTES,
      maxArtifactBytes: e.ROOST_MAX_ARTIFACT_BYTES,
    },
    sharedCaches: {
      unusedDays: e.ROOST_SHARED_CACHE_DAYS,
      maxBytesPerProject: e.ROOST_SHARED_CACHE_MAX_MB * 1024 * 1024,
    },
    retention: {
      logDays: e.ROOST_LOG_RETENTION_DAYS,
      artifactDays: e.ROOST_ARTIFACT_RETENTION_DAYS,
      keepBuilds: e.ROOST_KEEP_BUILDS,
      warnDataDirBytes: e.ROOST_DATA_DIR_WARN_BYTES,
    },
  };
}

/** The object store as it may be printed: never its credentials. */
export function displayObjectStore(store: ObjectStoreConfig): string {
  if (store.kind === "disk") return "disk";
  return `s3://${store.bucket}/${store.prefix}${store.endpoint ? ` at ${store.endpoint}` : ""}`;
}

/** The database URL as it may be printed: no credentials, no query string (it may carry an auth token). */
export function displayDatabaseUrl(url: string): string {
  if (url.startsWith("file:")) return url.split("?")[0]!;
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === "/" ? "" : u.pathname}`;
  } catch {
    return "(the configured ROOST_DATABASE_URL)";
  }
}
