// The live-update module of one application (AppContext.live): the per-build log hubs and what
// feeds them, the build feed of GET /v1/events, and the one watcher that looks for changes made
// through another daemon process. Made with the context (lib/daemon/server.ts, tests/helpers/app.ts) and
// closed when the daemon stops, so nothing of it is module state: two applications in one
// process (a test's second "daemon") each have their own.
import type { Db } from "../db/client.ts";
import type { EventBus } from "../daemon/events.ts";
import { LocalLogHubNamespace, type HubLimits, type LogHubNamespace } from "./hub.ts";
import { LogFeed } from "./log-feed.ts";
import { BuildFeed } from "./build-feed.ts";
import { Watcher } from "./watcher.ts";

export interface Live {
  /** The per-build log hubs (hub.ts), Durable-Object-shaped. */
  hubs: LogHubNamespace;
  /** Appended lines and build statuses into the hubs (log-feed.ts). */
  logs: LogFeed;
  /** Build changes for GET /v1/events (build-feed.ts). */
  builds: BuildFeed;
  /** Stops the watcher's checks: the daemon is stopping. */
  close(): void;
}

/** `logCheckMs`: how often a watched build's log is checked (log-feed.ts CHECK_MS unless given). */
export function createLive(deps: { db: Db; events: EventBus }, hubLimits: Partial<HubLimits> = {}, logCheckMs?: number): Live {
  const watcher = new Watcher(deps.events);
  const hubs = new LocalLogHubNamespace(hubLimits);
  return {
    hubs,
    logs: new LogFeed(deps.db, hubs, watcher, logCheckMs),
    builds: new BuildFeed(deps.db, watcher),
    close: () => watcher.close(),
  };
}
