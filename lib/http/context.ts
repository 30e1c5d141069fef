// What a handler may touch. Handlers never read process.env, Date.now() or a global database:
// everything arrives here, so a test can hand in its own clock, database and peer address.
import type { Config } from "../daemon/config.ts";
import type { Db } from "../db/client.ts";
import type { Logger } from "../daemon/log.ts";
import type { Principal } from "../auth/principal.ts";
import type { Runner, RunnerStands } from "../runners/store.ts";
import type { SecretBox } from "../crypto/secret-box.ts";
import type { EventBus } from "../daemon/events.ts";
import type { MetricsRegistry } from "../daemon/metrics.ts";
import type { Live } from "../live/live.ts";
import type { ProjectAccess } from "../auth/project-access.ts";
import type { AuthRule, InstanceRule, ProjectRule, ProjectScopeParam } from "./route.ts";
import type { OidcCache } from "../auth/oidc-cache.ts";
import type { ObjectStore } from "../object-store/store.ts";

export interface Clock {
  /** Unix epoch seconds (docs/api.md "Conventions"). */
  now(): number;
}

export const systemClock: Clock = { now: () => Math.floor(Date.now() / 1000) };

export interface AppContext {
  db: Db;
  config: Config;
  clock: Clock;
  log: Logger;
  /** Encrypts secrets at rest with the key kept outside the database (lib/crypto/secret-box.ts). */
  secrets: SecretBox;
  /** In-process notifications (lib/daemon/events.ts); the database stays the source of truth. */
  events: EventBus;
  /** Process-local counters and gauges for GET /metrics (lib/daemon/metrics.ts). */
  metrics: MetricsRegistry;
  /** Live updates (lib/live/): the per-build log hubs, the build feed and the watcher of other processes. */
  live: Live;
  /** Aborted when the daemon begins a graceful shutdown: long polls return, SSE streams end with a reconnect hint. */
  shutdown: AbortSignal;
  /** The identity provider's discovery document and key set, per app rather than per process (lib/auth/oidc.ts). */
  oidc: OidcCache;
  /** Where artifacts and finished logs are kept: the data directory or an S3-compatible bucket (lib/object-store/). */
  objects: ObjectStore;
}

export interface RequestContext extends AppContext {
  request: Request;
  /** The TCP peer address of the socket (never a forwarding header); null when unknown. */
  peer: string | null;
  requestId: string;
  /**
   * Sets this connection's idle timeout in seconds (0 = none). The listener closes connections idle
   * for longer than 30 seconds, so SSE streams and long polls call this. A no-op in-process.
   */
  setIdleTimeout(seconds: number): void;
  /**
   * Sets, from now, how long the rest of this request's body may take to arrive (0 = no bound);
   * the listener answers 408 request_timeout after ROOST_REQUEST_TIMEOUT_SECONDS otherwise. For
   * long uploads (a runner's artifacts). A no-op in-process.
   */
  setBodyTimeout(seconds: number): void;
}

/** The setup token that authorized a `setup` route, with its expiry. */
export interface SetupGrant {
  id: string;
  expires_at: number;
}

/**
 * What a route's auth rule (lib/http/route.ts AuthRule) authenticated and loaded before the handler
 * runs, by rule: the caller for user routes, the runner for runner routes, the project (and the
 * pipeline, build, delivery or deployment the path names) for projectRole(...) routes.
 */
export type AuthenticatedBy<R extends AuthRule> =
  R extends ProjectRule<infer Via>
    ? ProjectAccess<Via>
    : R extends "session"
      ? { principal: Principal & { kind: "session"; sessionId: string } }
      : R extends InstanceRule
        ? { principal: Principal }
        : R extends "runner"
          ? { runner: Runner; runnerStands?: RunnerStands }
          : R extends "setup"
            ? { setupToken: SetupGrant }
            : R extends "stream"
              ? { principal: Principal; streamBuildId: string }
              : unknown;

/** The context a handler on a route with rule R receives. */
export type ContextFor<R extends AuthRule> = RequestContext & AuthenticatedBy<R>;

export type UserContext = ContextFor<InstanceRule>;
export type SessionContext = ContextFor<"session">;
export type RunnerContext = ContextFor<"runner">;
export type SetupContext = ContextFor<"setup">;
export type StreamContext = ContextFor<"stream">;
/** A projectRole(minimum, via) route: `ProjectContext<"build_id">` carries the build and its project. */
export type ProjectContext<Via extends ProjectScopeParam = "project_id"> = ContextFor<ProjectRule<Via>>;
