// `roost serve`: opens the database, applies migrations, prepares first-run setup, and serves
// the API over TCP and the management socket over a Unix socket. The route table comes from the
// caller (bin/roost.ts hands in handlers/routes.ts): lib/ holds mechanisms, never the endpoints.
import { EventBus } from "./events.ts";
import { createLive } from "../live/live.ts";
import { MetricsRegistry } from "./metrics.ts";
import { access, chmod, constants, mkdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { displayDatabaseUrl, displayObjectStore, type Config } from "./config.ts";
import type { AppContext } from "../http/context.ts";
import { systemClock } from "../http/context.ts";
import { createApp, type App } from "../http/app.ts";
import { listen, type Listener } from "../http/listener.ts";
import { openDatabase, type Db } from "../db/client.ts";
import { migrate } from "../db/migrate.ts";
import { getInstance } from "../setup/instance.ts";
import { mintSetupToken } from "../auth/one-time-credentials.ts";
import { writeSetupTokenFile } from "../setup/token-file.ts";
import { createLogger, type Logger } from "./log.ts";
import { renderError } from "../http/io.ts";
import { ApiError, databaseUnavailableError } from "../http/errors.ts";
import { diskFullError, isDiskFullError } from "./disk.ts";
import { isDatabaseUnreachable } from "../db/database.ts";
import { removeUnreferencedFiles } from "../artifacts/artifacts.ts";
import { createSecretBox, loadSecretKey } from "../crypto/secret-box.ts";
import { startBackgroundWork } from "./background.ts";
import { openObjectStore } from "../object-store/store.ts";
import { createOidcCache } from "../auth/oidc-cache.ts";
import { SocketInUseError, startManagementSocket, type ManagementSocket } from "./management-socket.ts";
import type { RouteEntry } from "../http/route.ts";

/** A connection with no traffic for this long is closed, unless its request said otherwise. */
const IDLE_TIMEOUT_SECONDS = 30;

/** How long a graceful shutdown waits for in-flight requests before closing connections. */
export const SHUTDOWN_GRACE_MS = 10_000;

export interface RunningDaemon {
  url: string;
  db: Db;
  stop(): Promise<void>;
}

/**
 * A reason the daemon cannot start, said in one line that names the cause; `roost serve` prints
 * it and exits 2 (a configuration problem, not a crash: no stack trace).
 */
export class StartupError extends Error {}

/** Files in the data directory that hold secrets; a restored copy may arrive with a looser mode. */
const PRIVATE_FILES = ["roost.db", "roost.db-wal", "roost.db-shm", "secret.key", "setup-token"];

const FS_REASONS: Record<string, string> = {
  EACCES: "permission denied",
  EPERM: "permission denied",
  EROFS: "read-only file system",
  ENOTDIR: "a part of the path is a file, not a directory",
  EEXIST: "a file, not a directory, is in the way",
  ENOSPC: "no space left on the device",
};

/** One line for a failed system call: its reason (without the stack or a repeated path). */
export function describeSystemError(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const reason = typeof code === "string" ? FS_REASONS[code] : undefined;
  return reason ?? oneLine(error instanceof Error ? error.message : String(error));
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").trim();
}

/**
 * Creates the data directory (0700) and checks that this user can write to it, so a wrong owner
 * or a read-only mount stops the start with one line instead of a database error later.
 */
export async function prepareDataDir(config: Config): Promise<void> {
  // Everything the daemon writes (database, setup token, socket, backups) is for its own user only.
  process.umask(0o077);
  try {
    await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
    await access(config.dataDir, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new StartupError(`data directory ${config.dataDir} is not writable: ${describeSystemError(error)}`);
  }
  await chmod(config.dataDir, 0o700).catch(() => {});
  await tightenPrivateFiles(config.dataDir);
}

/** A database or key restored with cp keeps the copy's mode; bring it back to 0600 like everything Roost writes. */
export async function tightenPrivateFiles(dataDir: string): Promise<void> {
  for (const name of PRIVATE_FILES) {
    const path = join(dataDir, name);
    const info = await stat(path).catch(() => null);
    if (info?.isFile() && (info.mode & 0o077) !== 0) await chmod(path, 0o600).catch(() => {});
  }
}

/** Runs the bind of ROOST_LISTEN; a failure becomes one line naming the address and the reason. */
async function listenOrFail<T>(config: Config, bind: () => Promise<T>): Promise<T> {
  const address = `${config.listen.hostname.includes(":") ? `[${config.listen.hostname}]` : config.listen.hostname}:${config.listen.port}`;
  try {
    return await bind();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const reason =
      code === "EADDRINUSE"
        ? "the address is already in use (another roost or another program listens there)"
        : code === "EACCES"
          ? "permission denied (ports below 1024 need privileges)"
          : code === "EADDRNOTAVAIL"
            ? "this host has no such address"
            : describeSystemError(error);
    throw new StartupError(`cannot listen on ROOST_LISTEN ${address}: ${reason}`);
  }
}

/** While setup is incomplete, every start writes a fresh setup token to a 0600 file and logs its path; true then. */
async function prepareFirstRun(db: Db, config: Config, log: Logger): Promise<boolean> {
  const instance = await getInstance(db);
  if (instance.state !== "incomplete") return false;
  const minted = await mintSetupToken(db, systemClock.now());
  const path = await writeSetupTokenFile(config.dataDir, minted.token);
  log.info("setup is incomplete", {
    setup_token_file: path,
    hint: "Open Roost in a browser on this machine (the URL follows once it listens): the setup wizard makes you the owner (Local Only), or asks for the token in this file (External Access). README, First run.",
  });
  return true;
}

/**
 * The one line for a person among the JSON ones: where to open the web app. ROOST_PUBLIC_URL
 * when set; else the listening address, loopback for a wildcard one (0.0.0.0 is no address to
 * open). The JSON `msg` is the sentence, so it reads the same raw or through a log viewer.
 */
function logBrowserUrl(log: Logger, config: Config, server: Listener, firstRun: boolean): void {
  const host =
    server.hostname === "0.0.0.0" || !server.hostname
      ? "127.0.0.1"
      : server.hostname === "::"
        ? "[::1]"
        : server.hostname.includes(":")
          ? `[${server.hostname}]`
          : server.hostname;
  const url = `${config.publicUrl ?? `http://${host}:${server.port}`}/`;
  const where = config.publicUrl ? "" : " on this machine";
  log.notice(`open ${url} in a browser${where} ${firstRun ? "to set up Roost" : "to use Roost"}`, { url });
}

export async function startDaemon(config: Config, routes: RouteEntry[], log: Logger = createLogger(config.logLevel)): Promise<RunningDaemon> {
  // 1. The port first: a second daemon on a taken port stops here, before it migrates, mints a
  //    setup token or takes over the management socket of the one already serving.
  let app: App | null = null;
  const server = await listenOrFail(config, () =>
    listen(
      {
        fetch(request, peer, connection) {
          // Between the bind and the end of start-up (migrations, first run): not ready yet.
          if (!app) return Promise.resolve(renderError(new ApiError("not_ready", "Roost is starting; try again in a moment.")));
          return app.fetch(request, peer, connection);
        },
        refuseMethod(method, pathname) {
          return app ? app.refuseMethod(method, pathname) : renderError(new ApiError("not_ready", "Roost is starting; try again in a moment."));
        },
        // The last safety net: never an HTML page or a stack trace.
        error(error) {
          if (isDiskFullError(error)) {
            log.error("data directory disk full", { error });
            return renderError(diskFullError());
          }
          if (isDatabaseUnreachable(error)) {
            log.warn("database unreachable", { error: String(error) });
            return renderError(databaseUnavailableError());
          }
          log.error("unhandled server error", { error });
          return renderError(new ApiError("internal_error", "An unexpected error occurred."));
        },
      },
      {
        hostname: config.listen.hostname,
        port: config.listen.port,
        // Where a request without a Host header (HTTP/1.0) is taken to have been sent.
        fallbackOrigin: config.publicUrl ?? null,
        requestTimeoutSeconds: config.requestTimeoutSeconds,
        // Long-lived responses (SSE, long polls) set their own (RequestContext.setIdleTimeout).
        idleTimeoutSeconds: IDLE_TIMEOUT_SECONDS,
        log,
      },
    ),
  );
  let db: Db | null = null;
  try {
    // 2. The data directory, then the database: each failure is one line naming what failed.
    await prepareDataDir(config);
    db = await openAndMigrate(config, log);
    await sweepArtifactFiles(db, config, log);
    const firstRun = await prepareFirstRun(db, config, log);

    const secrets = await createSecretBox(await loadSecretKey(config.dataDir, config.secretKey));
    const shutdown = new AbortController();
    const events = new EventBus();
    const ctx: AppContext = {
      db,
      config,
      clock: systemClock,
      log,
      secrets,
      events,
      metrics: new MetricsRegistry(),
      live: createLive({ db, events }),
      shutdown: shutdown.signal,
      oidc: createOidcCache(),
      objects: openObjectStore(config.objectStore, config.dataDir, log),
    };
    const socket = await startManagementSocket({ db, clock: systemClock, log, path: config.managementSocketPath }).catch((error: unknown) => {
      // A second daemon on the same data dir: the first one's socket mints capabilities for the shared database.
      if (error instanceof SocketInUseError) {
        log.info("management socket served by another roost process on this host", { path: config.managementSocketPath });
        return null;
      }
      throw new StartupError(`cannot serve the management socket ${config.managementSocketPath}: ${describeSystemError(error)}`);
    });
    app = createApp(ctx, routes);
    const daemon = running(ctx, server, shutdown, socket);
    logBrowserUrl(log, config, server, firstRun);
    return daemon;
  } catch (error) {
    await server.stop(true);
    db?.close();
    throw error;
  }
}

/** Artifact files a killed upload (or a killed retention pass) left without a row (lib/artifacts/artifacts.ts). */
async function sweepArtifactFiles(db: Db, config: Config, log: Logger): Promise<void> {
  let swept: Awaited<ReturnType<typeof removeUnreferencedFiles>>;
  try {
    swept = await removeUnreferencedFiles(db, config.dataDir, systemClock.now());
  } catch (error) {
    // Leftover files cost disk space, not correctness: Roost starts anyway.
    log.error("could not sweep artifact files no database row refers to", { error });
    return;
  }
  if (swept.skipped) log.warn("artifact files kept: the database has no builds, so it may not be this data directory's", { data_dir: config.dataDir });
  if (swept.files > 0) log.info("removed artifact files no database row refers to", { files: swept.files, bytes: swept.bytes });
}

async function openAndMigrate(config: Config, log: Logger): Promise<Db> {
  let db: Db | null = null;
  try {
    db = await openDatabase(config.databaseUrl, config.databaseAuthToken, undefined, config.databaseTimeoutMs);
    const migrated = await migrate(db, systemClock.now);
    if (migrated.from !== migrated.to) log.info("database migrated", migrated);
    return db;
  } catch (error) {
    db?.close();
    throw new StartupError(`cannot use the database ${displayDatabaseUrl(config.databaseUrl)}: ${describeSystemError(error)}`);
  }
}

/** 3. Serving: background work starts, "roost listening" is logged, and stop() shuts down in order. */
function running(ctx: AppContext, server: Listener, shutdown: AbortController, socket: ManagementSocket | null): RunningDaemon {
  const { config, log, db } = ctx;
  const url = `http://${server.hostname?.includes(":") ? `[${server.hostname}]` : server.hostname}:${server.port}`;
  const stopBackground = startBackgroundWork(ctx, config.publicUrl ?? url);
  log.notice("roost listening", {
    url,
    data_dir: config.dataDir,
    object_store: displayObjectStore(config.objectStore),
    management_socket: socket?.path ?? null,
  });

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
      ctx.live.close();
      await socket?.stop();
      db.close();
      log.notice("roost stopped");
    },
  };
}
