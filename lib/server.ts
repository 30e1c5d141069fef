// `roost serve`: opens the database, applies migrations, prepares first-run setup, and serves
// the API over TCP and the management socket over a Unix socket.
import { EventBus } from "./events.ts";
import { LocalLogHubNamespace } from "./log-hub.ts";
import { MetricsRegistry } from "./metrics.ts";
import { mkdir, chmod } from "node:fs/promises";
import type { Config } from "./config.ts";
import type { AppContext } from "./context.ts";
import { systemClock } from "./context.ts";
import { createApp } from "./app.ts";
import { openDatabase, type Db } from "./db/client.ts";
import { migrate } from "./db/migrate.ts";
import { getInstance } from "./db/instance.ts";
import { mintSetupToken } from "./db/one-time-credentials.ts";
import { writeSetupTokenFile } from "./setup-token-file.ts";
import { createLogger, type Logger } from "./log.ts";
import { renderError } from "./http.ts";
import { ApiError } from "./errors.ts";
import { diskFullError, isDiskFullError } from "./disk.ts";
import { removeAbandonedUploads } from "./artifacts.ts";
import { routes } from "../handlers/routes.ts";
import { createSecretBox, loadSecretKey } from "./crypto/secret-box.ts";
import { startBackgroundWork } from "./background.ts";
import { createOidcCache } from "./auth/oidc.ts";
import { SocketInUseError, startManagementSocket } from "../scripts/management-socket.ts";

/**
 * Bun's own cap on a request body. Above it Bun answers an empty 413 itself, so it is set far
 * above every route's limit: each route enforces its own (documented) limit and answers
 * 413 payload_too_large as JSON, checking Content-Length before reading anything.
 */
export const MAX_REQUEST_BODY_BYTES = 2 * 1024 * 1024 * 1024;

/** How long a graceful shutdown waits for in-flight requests before closing connections. */
export const SHUTDOWN_GRACE_MS = 10_000;

export interface RunningDaemon {
  url: string;
  db: Db;
  stop(): Promise<void>;
}

export async function prepareDataDir(config: Config): Promise<void> {
  // Everything the daemon writes (database, setup token, socket) is for its own user only.
  process.umask(0o077);
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  await chmod(config.dataDir, 0o700).catch(() => {});
}

/** While setup is incomplete, every start writes a fresh setup token to a 0600 file and logs its path. */
export async function prepareFirstRun(db: Db, config: Config, log: Logger): Promise<void> {
  const instance = await getInstance(db);
  if (instance.state !== "incomplete") return;
  const minted = await mintSetupToken(db, systemClock.now());
  const path = await writeSetupTokenFile(config.dataDir, minted.token);
  log.info("setup is incomplete", {
    setup_token_file: path,
    hint: "Local Only: POST /v1/auth/local/login from this machine. External Access: use the token in this file (README, First run).",
  });
}

export async function startDaemon(config: Config, log: Logger = createLogger(config.logLevel)): Promise<RunningDaemon> {
  await prepareDataDir(config);
  const abandoned = await removeAbandonedUploads(config.dataDir, systemClock.now());
  if (abandoned > 0) log.info("removed artifact uploads a stopped daemon left unfinished", { files: abandoned });
  const db = await openDatabase(config.databaseUrl, config.databaseAuthToken);
  const migrated = await migrate(db, systemClock.now);
  if (migrated.from !== migrated.to) log.info("database migrated", migrated);
  await prepareFirstRun(db, config, log);

  const secrets = await createSecretBox(await loadSecretKey(config.dataDir, config.secretKey));
  const shutdown = new AbortController();
  const ctx: AppContext = { db, config, clock: systemClock, log, secrets, events: new EventBus(), metrics: new MetricsRegistry(), logHubs: new LocalLogHubNamespace(), shutdown: shutdown.signal, oidc: createOidcCache() };
  const app = createApp(ctx, routes);
  const socket = await startManagementSocket({ db, clock: systemClock, log, path: config.managementSocketPath }).catch((error: unknown) => {
    // A second daemon on the same data dir: the first one's socket mints capabilities for the shared database.
    if (error instanceof SocketInUseError) {
      log.info("management socket served by another roost process on this host", { path: config.managementSocketPath });
      return null;
    }
    throw error;
  });

  const server = Bun.serve({
    hostname: config.listen.hostname,
    port: config.listen.port,
    development: false,
    maxRequestBodySize: MAX_REQUEST_BODY_BYTES,
    // Long-lived responses (SSE, long polls) call server.timeout(request, …) themselves.
    idleTimeout: 30,
    fetch(request, srv) {
      const peer = srv.requestIP(request)?.address ?? null;
      return app.fetch(request, peer, { setIdleTimeout: (seconds) => srv.timeout(request, seconds) });
    },
    // The last safety net: never an HTML page or a stack trace.
    error(error) {
      if (isDiskFullError(error)) {
        log.error("data directory disk full", { error });
        return renderError(diskFullError());
      }
      log.error("unhandled server error", { error });
      return renderError(new ApiError("internal_error", "An unexpected error occurred."));
    },
  });
  const url = `http://${server.hostname?.includes(":") ? `[${server.hostname}]` : server.hostname}:${server.port}`;
  const stopBackground = startBackgroundWork(ctx, config.publicUrl ?? url);
  log.notice("roost listening", { url, data_dir: config.dataDir, management_socket: socket?.path ?? null });

  return {
    url,
    db,
    async stop() {
      // Graceful shutdown: readiness turns 503 and long-lived responses (SSE, long polls) end
      // first, then the listener stops accepting and in-flight requests finish, then the
      // management socket and the database close. Anything still open after the grace period is cut.
      shutdown.abort();
      await stopBackground();
      const drained = server.stop(false);
      const grace = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), SHUTDOWN_GRACE_MS).unref());
      if ((await Promise.race([drained.then(() => "drained" as const), grace])) === "timeout") {
        log.warn("shutdown grace period over; closing remaining connections", { grace_ms: SHUTDOWN_GRACE_MS });
        await server.stop(true);
      }
      await socket?.stop();
      db.close();
      log.notice("roost stopped");
    },
  };
}
