// The Unix management socket. Only someone who can open this 0600 socket file (the daemon's
// user, or root) can mint a recovery capability or a setup token: TCP, loopback and forwarding
// headers grant no such authority (docs/api.md "Authentication").
//
// `roost serve` serves it in-process (bin/roost.ts through lib/daemon/server.ts); the companion
// scripts/management-socket.ts serves it alone, beside a daemon in another process on the same database.
import { chmod, rm, stat } from "node:fs/promises";
import type { Server } from "bun";
import type { Db } from "../db/client.ts";
import type { Clock } from "../http/context.ts";
import type { Logger } from "./log.ts";
import { getInstance } from "../setup/instance.ts";
import { mintRecoveryCapability, mintSetupToken } from "../auth/one-time-credentials.ts";

/** Another daemon process on this host already serves the socket (they share the database, so it can serve this one too). */
export class SocketInUseError extends Error {}

export interface ManagementSocket {
  path: string;
  stop(): Promise<void>;
}

function reply(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

/** Whether a process answers on the socket at `path`. */
function served(path: string): Promise<boolean> {
  return fetch("http://roost/status", { unix: path } as RequestInit).then(
    (response) => {
      void response.arrayBuffer();
      return true;
    },
    () => false,
  );
}

export async function startManagementSocket(deps: { db: Db; clock: Clock; log: Logger; path: string }): Promise<ManagementSocket> {
  const { db, clock, log, path } = deps;
  // A socket file left by a process that died would make listen fail; nobody is serving it, so remove it.
  if (await stat(path).catch(() => null)) {
    if (await served(path)) throw new SocketInUseError(`Another roost is already serving the management socket ${path}`);
    await rm(path, { force: true });
  }
  // The umask makes the socket 0600 from the moment it exists; chmod repeats it for filesystems that ignore umask on sockets.
  const previous = process.umask(0o177);
  let server: Server<undefined>;
  try {
    server = Bun.serve({
      unix: path,
      development: false,
      async fetch(request) {
        const { pathname } = new URL(request.url);
        try {
          if (request.method === "GET" && pathname === "/status") {
            const instance = await getInstance(db);
            return reply({ state: instance.state, runtime_mode: instance.runtime_mode ?? "local", remote_auth_mode: instance.remote_auth_mode });
          }
          if (request.method === "POST" && pathname === "/recovery-capabilities") {
            const minted = await mintRecoveryCapability(db, clock.now());
            log.info("recovery capability minted over the management socket", { expires_at: minted.expires_at });
            return reply({ recovery_capability: minted.token, expires_at: minted.expires_at }, 201);
          }
          if (request.method === "POST" && pathname === "/setup-tokens") {
            const instance = await getInstance(db);
            if (instance.state === "ready") return reply({ code: "setup_already_complete", message: "Setup is complete; no setup token is needed." }, 409);
            const minted = await mintSetupToken(db, clock.now());
            log.info("setup token minted over the management socket", { expires_at: minted.expires_at });
            return reply({ setup_token: minted.token, expires_at: minted.expires_at }, 201);
          }
          return reply({ code: "not_found", message: `No management operation at ${request.method} ${pathname}.` }, 404);
        } catch (error) {
          log.error("management socket error", { error });
          return reply({ code: "internal_error", message: "The management operation failed; see the daemon log." }, 500);
        }
      },
    });
  } catch (error) {
    process.umask(previous);
    // Two processes started at the same moment both found no socket; the other bound it first.
    if ((error as { code?: unknown }).code === "EADDRINUSE" && (await served(path)))
      throw new SocketInUseError(`Another roost is already serving the management socket ${path}`);
    throw error;
  }
  process.umask(previous);
  await chmod(path, 0o600);
  return {
    path,
    async stop() {
      await server.stop(true);
      await rm(path, { force: true });
    },
  };
}
