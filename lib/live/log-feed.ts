// What feeds the log hubs (hub.ts), which have no database of their own, as a Durable Object
// would not. One feed per application (AppContext.live):
// - publish: lines a request just committed go to the build's hub without being read back;
// - while a build has open streams here, the watcher (watcher.ts) runs ONE cheap check per build
//   (not per stream) every CHECK_MS: the build's status and last seq. When lines were appended
//   through another process, the missing page is read once and published to every local stream;
//   a status change goes to the hub, which tells the streams. In-process events (a build changed,
//   a job finished) run the check at once, so `status` and `end` need no query per stream.
import type { Db } from "../db/client.ts";
import { one } from "../db/client.ts";
import { readLogPage, type LogEntry } from "../logs/store.ts";
import { isFinished, type BuildStatus } from "../builds/state-machine.ts";
import type { HubStatus, LogFrameEntry, LogHubNamespace } from "./hub.ts";
import type { Watcher } from "./watcher.ts";

/** How often a watched build's status and last seq are checked: the latency for lines appended through another process. */
export const CHECK_MS = 500;
/** The most lines one check reads to fill the hub; a stream further behind reads the database itself. */
const FILL_PAGE = 500;

export class LogFeed {
  constructor(
    readonly db: Db,
    readonly hubs: LogHubNamespace,
    readonly watcher: Watcher,
    /** CHECK_MS; a test that must tell the in-process events from the timed checks sets it past its own length. */
    readonly checkMs = CHECK_MS,
  ) {}

  /** A stream of `buildId` opened here; call the returned function when it closes. Checks at once. */
  watch(buildId: string): () => void {
    return this.watcher.hold(watchKey(buildId), {
      everyMs: this.checkMs,
      check: () => this.#check(buildId),
      onEvent: (event) => (event.type === "build.changed" || event.type === "job.finished") && event.build_id === buildId,
    }).release;
  }

  /**
   * Lines just committed (oldest first) go to the build's hub. When the hub has streams here and
   * missed lines before these (appended through another process since its last check), the
   * missing ones are read once and published first, so the streams do not each read them.
   */
  async publish(buildId: string, entries: readonly LogFrameEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const hub = this.hubs.get(buildId);
    if (this.watcher.isHeld(watchKey(buildId))) {
      const known = await hub.lastSeq();
      const first = entries[0]!.seq;
      if (first > known + 1 && first - 1 - known <= FILL_PAGE) {
        const missing = await readLogPage(this.db, buildId, known, first - 1 - known);
        if (missing.length) await hub.publish(missing.map(frameEntry));
      }
    }
    await hub.publish(entries);
  }

  async #check(buildId: string): Promise<void> {
    const row = await one(
      this.db,
      `SELECT b.status, b.exit_code, COALESCE(s.last_seq, 0) AS last_seq,
              EXISTS (SELECT 1 FROM jobs j WHERE j.build_id = b.id AND j.status = 'running') AS running
         FROM builds b LEFT JOIN build_log_stats s ON s.build_id = b.id WHERE b.id = +?`,
      [buildId],
    );
    if (!row) return;
    const hub = this.hubs.get(buildId);
    const lastSeq = Number(row.last_seq);
    const known = await hub.lastSeq();
    if (lastSeq > known) {
      // Lines this process has not published (appended through another one): read them once for
      // every stream here. Far behind, only the newest page; streams behind that read the database.
      const page = await readLogPage(this.db, buildId, Math.max(known, lastSeq - FILL_PAGE), FILL_PAGE);
      if (page.length) await hub.publish(page.map(frameEntry));
    }
    const status = String(row.status) as BuildStatus;
    const report: HubStatus = {
      status,
      exit_code: row.exit_code === null ? null : Number(row.exit_code),
      ended: isFinished(status) && !Number(row.running),
      last_seq: lastSeq,
    };
    await hub.setStatus(report);
  }
}

function watchKey(buildId: string): string {
  return `log:${buildId}`;
}

function frameEntry(e: LogEntry): LogFrameEntry {
  return { seq: e.seq, step: e.step, stream: e.stream, ts: e.ts, text: e.text };
}
