// The database side of the log hubs (lib/log-hub.ts), which have no database of their own, as a
// Durable Object would not. One watcher per namespace (so per daemon process):
// - publishLogs: lines a request just committed go to the build's hub without being read back;
// - while a build has open streams here, ONE cheap check per build (not per stream) every
//   CHECK_MS: the build's status and last seq. When lines were appended through another process,
//   the missing page is read once and published to every local stream; a status change goes to
//   the hub, which tells the streams. In-process events (a build changed, a job finished) run the
//   check at once, so `status` and `end` need no query per stream.
import type { Db } from "../db/client.ts";
import { one } from "../db/client.ts";
import { readLogPage, type LogEntry } from "../db/build-logs.ts";
import type { EventBus, RoostEvent } from "../events.ts";
import { isFinished, type BuildStatus } from "../builds/state-machine.ts";
import type { HubStatus, LogFrameEntry, LogHubNamespace } from "../log-hub.ts";

/** How often a watched build's status and last seq are checked: the latency for lines appended through another process. */
export const CHECK_MS = 500;
/** The most lines one check reads to fill the hub; a stream further behind reads the database itself. */
const FILL_PAGE = 500;

export interface LiveDeps {
  db: Db;
  events: EventBus;
  logHubs: LogHubNamespace;
}

interface Watched {
  refs: number;
  timer: ReturnType<typeof setInterval>;
  checking: Promise<void> | null;
  again: boolean;
}

export class LogWatcher {
  readonly #builds = new Map<string, Watched>();
  #unsubscribe: (() => void) | null = null;
  /** Checks run, for tests and metrics. */
  checks = 0;

  constructor(readonly deps: LiveDeps) {}

  isWatched(buildId: string): boolean {
    return this.#builds.has(buildId);
  }

  /** A stream of `buildId` opened here; call the returned function when it closes. Checks at once. */
  watch(buildId: string): () => void {
    let w = this.#builds.get(buildId);
    if (!w) {
      const timer = setInterval(() => void this.check(buildId), CHECK_MS);
      (timer as { unref?: () => void }).unref?.();
      this.#builds.set(buildId, (w = { refs: 0, timer, checking: null, again: false }));
      this.#unsubscribe ??= this.deps.events.subscribe((event) => this.#onEvent(event));
      void this.check(buildId);
    }
    w.refs++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--w.refs > 0) return;
      clearInterval(w.timer);
      this.#builds.delete(buildId);
      if (this.#builds.size === 0) {
        this.#unsubscribe?.();
        this.#unsubscribe = null;
      }
    };
  }

  #onEvent(event: RoostEvent): void {
    if ((event.type === "build.changed" || event.type === "job.finished") && this.#builds.has(event.build_id)) void this.check(event.build_id);
  }

  /** One check of a watched build; concurrent calls share it (and one more runs after, if asked meanwhile). */
  check(buildId: string): Promise<void> {
    const w = this.#builds.get(buildId);
    if (!w) return Promise.resolve();
    if (w.checking) {
      w.again = true;
      return w.checking;
    }
    const run = async (): Promise<void> => {
      do {
        w.again = false;
        try {
          await this.#checkOnce(buildId);
        } catch {
          // The next tick tries again; a stream never depends on one check.
        }
      } while (w.again && this.#builds.get(buildId) === w);
      w.checking = null;
    };
    return (w.checking = run());
  }

  async #checkOnce(buildId: string): Promise<void> {
    this.checks++;
    const row = await one(
      this.deps.db,
      `SELECT b.status, b.exit_code, COALESCE(s.last_seq, 0) AS last_seq,
              EXISTS (SELECT 1 FROM jobs j WHERE j.build_id = b.id AND j.status = 'running') AS running
         FROM builds b LEFT JOIN build_log_stats s ON s.build_id = b.id WHERE b.id = ?`,
      [buildId],
    );
    if (!row) return;
    const hub = this.deps.logHubs.get(buildId);
    const lastSeq = Number(row.last_seq);
    const known = await hub.lastSeq();
    if (lastSeq > known) {
      // Lines this process has not published (appended through another one): read them once for
      // every stream here. Far behind, only the newest page; streams behind that read the database.
      const page = await readLogPage(this.deps.db, buildId, Math.max(known, lastSeq - FILL_PAGE), FILL_PAGE);
      if (page.length) await hub.publish(page.map(frameEntry));
    }
    const status = String(row.status) as BuildStatus;
    const report: HubStatus = { status, exit_code: row.exit_code === null ? null : Number(row.exit_code), ended: isFinished(status) && !Number(row.running), last_seq: lastSeq };
    await hub.setStatus(report);
  }
}

const watchers = new WeakMap<LogHubNamespace, LogWatcher>();

/** The watcher of this namespace (this process's), created on first use with the caller's database and events. */
export function logWatcher(deps: LiveDeps): LogWatcher {
  let w = watchers.get(deps.logHubs);
  if (!w) watchers.set(deps.logHubs, (w = new LogWatcher(deps)));
  return w;
}

export function frameEntry(e: LogEntry | LogFrameEntry): LogFrameEntry {
  return { seq: e.seq, step: e.step, stream: e.stream, ts: e.ts, text: e.text };
}

/**
 * Lines just committed (oldest first) go to the build's hub. When the hub has streams here and
 * missed lines before these (appended through another process since its last check), the
 * missing ones are read once and published first, so the streams do not each read them.
 */
export async function publishLogs(deps: LiveDeps, buildId: string, entries: readonly LogFrameEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const hub = deps.logHubs.get(buildId);
  if (logWatcher(deps).isWatched(buildId)) {
    const known = await hub.lastSeq();
    const first = entries[0]!.seq;
    if (first > known + 1 && first - 1 - known <= FILL_PAGE) {
      const missing = await readLogPage(deps.db, buildId, known, first - 1 - known);
      if (missing.length) await hub.publish(missing.map(frameEntry));
    }
  }
  await hub.publish(entries);
}
