// The app behind a real socket, and a second daemon process on the same database: the world of
// the tests whose behaviour is the socket (Server-Sent Events, a stream's end) or a change made
// by another process (the live feed reads the database, not this process's event bus).
import type { TestApp } from "./app.ts";
import { startGithubFixture, type GithubFixture } from "./ci.ts";
import { createApp } from "../../lib/http/app.ts";
import { routes } from "../../handlers/routes.ts";
import { EventBus } from "../../lib/daemon/events.ts";
import { createLive } from "../../lib/live/live.ts";
import { openDatabase, type Db } from "../../lib/db/client.ts";

export type Served = ReturnType<typeof Bun.serve>;

/** Bun.serve in front of an app on a free loopback port, the way lib/daemon/server.ts calls it. */
export function serveOverSocket(app: ReturnType<typeof createApp>): Served {
  return Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request, srv) {
      return app.fetch(request, "127.0.0.1", { setIdleTimeout: (seconds) => srv.timeout(request, seconds), setBodyTimeout() {} });
    },
  });
}

/** The app of a second daemon process on the test app's database, in process: its own connection, event bus, hubs and build feed. */
export async function openSecondApp(t: TestApp, shutdown?: AbortSignal) {
  const db = await openDatabase(t.config.databaseUrl);
  const events = new EventBus();
  const ctx = { ...t.ctx, db, events, live: createLive({ db, events }), ...(shutdown ? { shutdown } : {}) };
  return { db, ctx, app: createApp(ctx, routes) };
}

export interface SecondDaemon {
  /** Its own connection to the test app's database. */
  db: Db;
  server: Served;
  /** A JSON call to it with `token` over its socket: the answer's body. */
  call(method: string, path: string, token: string, body?: unknown): Promise<any>;
  close(): void;
}

/**
 * A second daemon process on the test app's database: its own connection, event bus, hubs and
 * build feed, served on a socket of its own. `shutdown` ends its long-lived streams as the
 * daemon's shutdown does.
 */
export async function startSecondDaemon(t: TestApp, shutdown?: AbortSignal): Promise<SecondDaemon> {
  const { db, app } = await openSecondApp(t, shutdown);
  const server = serveOverSocket(app);
  return {
    db,
    server,
    call: (method, path, token, body) =>
      fetch(`http://127.0.0.1:${server.port}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then((r) => r.json()),
    close() {
      server.stop(true);
      db.close();
    },
  };
}

export interface TwoDaemonsFixture extends GithubFixture {
  /** The test app behind a socket. */
  server: Served;
  /** A second daemon process on the same database (startSecondDaemon). */
  second: SecondDaemon;
}

/** startGithubFixture's world behind a socket, and a second daemon on its database; stop() stops all. */
export async function startTwoDaemonsFixture(shutdown?: AbortSignal): Promise<TwoDaemonsFixture> {
  const fixture = await startGithubFixture();
  const server = serveOverSocket(fixture.t.app);
  const second = await startSecondDaemon(fixture.t, shutdown);
  return {
    ...fixture,
    server,
    second,
    async stop() {
      server.stop(true);
      second.close();
      await fixture.stop();
    },
  };
}
