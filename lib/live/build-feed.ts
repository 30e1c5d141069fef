// The build changes of this application, for the event streams of GET /v1/events
// (event-stream.ts). One feed per application (AppContext.live), whatever the number of streams:
// - an in-process event (lib/daemon/events.ts "build.changed", "build.queued") reads that build once and
//   hands it, encoded once, to every stream here;
// - builds changed through another daemon process on the same database are found by the watcher
//   (watcher.ts) every CHECK_MS while any stream is open: the versions of the builds whose
//   updated_at is at or after the newest one seen (an index, schema.sql migration 14, keeps it
//   cheap), a few columns each, VERSION_PAGE at a time; then, whole, only the builds of versions
//   not handed out yet, CHECK_PAGE at a time. A build carries its config snapshot (a pipeline file
//   is up to 256 KiB) and changelog: whole rows of every build changed lately passed what a libSQL
//   server answers at once (10 MB, RESPONSE_TOO_LARGE), and each check failed again. Between two
//   reads the check lets the event loop run: a bulk change of 100,000 builds was one read of
//   100,000 versions that held every request of the process until it ended. Nothing runs while no
//   stream is open.
// A build is handed out once per version (its updated_at, status, exit code and runner), so the
// check does not repeat what an in-process event already sent.
import type { Db } from "../db/client.ts";
import { one } from "../db/client.ts";
import { buildVersionsPage, findBuild, findBuilds, toPublicBuild, versionOf, type Build, type BuildVersion, type VersionPosition } from "../builds/store.ts";
import type { RoostEvent } from "../daemon/events.ts";
import { sseFrame } from "./sse-frame.ts";
import type { Hold, Watcher } from "./watcher.ts";

/** How often the database is checked for builds changed through another process (the latency of those). */
export const CHECK_MS = 1_000;
/** The most changed builds read whole at once (a check reads a burst of more in several reads). */
export const CHECK_PAGE = 200;
/** The most build versions one read takes (a few columns each); a check reads a longer burst in several, yielding between them. */
export const VERSION_PAGE = 1_000;

/** Lets the event loop run (I/O, timers, other requests) before the next read: a bun:sqlite read holds it while it runs. */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface BuildChange {
  project_id: string;
  build_id: string;
  /** The whole SSE frame, `event: build` and the build as GET /v1/builds/{id} answers it. */
  frame: string;
}

type Listener = (change: BuildChange) => void;

export class BuildFeed {
  readonly #listeners = new Set<Listener>();
  /** The watcher's hold while any stream is open. */
  #hold: Hold | null = null;
  /** The newest updated_at the checks have seen (null until the first check of this run). */
  #since: number | null = null;
  /** Versions already handed out, by build id. */
  readonly #sent = new Map<string, { updated_at: number; version: string }>();
  /** Checks run, for tests. */
  checks = 0;

  constructor(
    readonly db: Db,
    readonly watcher: Watcher,
  ) {}

  get listeners(): number {
    return this.#listeners.size;
  }

  /**
   * A stream opened here; the returned function removes it. The promise resolves once the feed
   * knows where the database stands, so no change after it is missed.
   */
  subscribe(listener: Listener): { ready: Promise<void>; unsubscribe: () => void } {
    this.#listeners.add(listener);
    if (!this.#hold) {
      this.#since = null;
      this.#hold = this.watcher.hold("builds", {
        everyMs: CHECK_MS,
        check: () => this.#checkOnce(),
        onEvent: (event) => (this.#onEvent(event), false),
      });
    }
    const ready = this.#hold.first;
    let removed = false;
    return {
      ready,
      unsubscribe: () => {
        if (removed) return;
        removed = true;
        this.#listeners.delete(listener);
        if (this.#listeners.size > 0) return;
        this.#hold?.release();
        this.#hold = null;
        this.#sent.clear();
      },
    };
  }

  #onEvent(event: RoostEvent): void {
    if (event.type !== "build.changed" && event.type !== "build.queued") return;
    void findBuild(this.db, event.build_id)
      .then((build) => build && this.#emit(build))
      .catch(() => {
        // The next check finds it.
      });
  }

  async #checkOnce(): Promise<void> {
    this.checks++;
    if (this.#since === null) {
      // Where the database stands now: builds changed at the newest second are taken as seen.
      const row = await one(this.db, "SELECT MAX(updated_at) AS at FROM builds");
      const at = row?.at === null || row?.at === undefined ? 0 : Number(row.at);
      await this.#readVersions(at, async (versions) => void versions.forEach((v) => this.#remember(v)));
      this.#since = at;
      return;
    }
    // updated_at has a resolution of one second: the builds of the newest second are read again
    // (and skipped by version) so one changed later in that same second is not missed.
    const newest = await this.#readVersions(this.#since, async (versions) => {
      const fresh = versions.filter((v) => this.#isNew(v));
      for (let i = 0; i < fresh.length; i += CHECK_PAGE) {
        if (i > 0) await yieldToLoop();
        for (const build of await findBuilds(
          this.db,
          fresh.slice(i, i + CHECK_PAGE).map((v) => v.id),
        ))
          this.#emit(build);
      }
    });
    if (newest !== null) this.#since = newest;
    // Versions older than the window are never read again by a check.
    if (this.#sent.size > 10_000) for (const [id, v] of this.#sent) if (v.updated_at < this.#since) this.#sent.delete(id);
  }

  /**
   * Every version changed at or after `since`, handed to `each` VERSION_PAGE at a time, oldest change
   * first, each read continuing after the last version of the one before (one seek of an index) and
   * made after the event loop ran; stops early when the last stream closed. Answers the newest
   * updated_at read (null when none was, or it stopped).
   */
  async #readVersions(since: number, each: (versions: BuildVersion[]) => Promise<void>): Promise<number | null> {
    let after: VersionPosition | null = null;
    for (;;) {
      const page = await buildVersionsPage(this.db, { since, after }, VERSION_PAGE);
      if (this.#hold === null) return null;
      await each(page);
      if (page.length < VERSION_PAGE) return page.at(-1)?.updated_at ?? after?.updated_at ?? null;
      after = page.at(-1)!.position;
      await yieldToLoop();
    }
  }

  /** True when this version of the build was not handed out (nor a newer one). */
  #isNew(v: BuildVersion): boolean {
    const sent = this.#sent.get(v.id);
    return !sent || (sent.version !== v.version && sent.updated_at <= v.updated_at);
  }

  /** Records the build's version; false when it was already handed out. */
  #remember(v: BuildVersion): boolean {
    if (!this.#isNew(v)) return false;
    this.#sent.set(v.id, { updated_at: v.updated_at, version: v.version });
    return true;
  }

  #emit(build: Build): void {
    if (this.#listeners.size === 0 || !this.#remember({ id: build.id, updated_at: build.updated_at, version: versionOf(build) })) return;
    const change: BuildChange = { project_id: build.project_id, build_id: build.id, frame: sseFrame("build", toPublicBuild(build)) };
    for (const listener of this.#listeners) {
      try {
        listener(change);
      } catch {
        // One stream's failure must not stop the others.
      }
    }
  }
}
