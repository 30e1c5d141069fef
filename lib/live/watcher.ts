// Changes made through another daemon process on the same database reach this one only by
// looking: lib/daemon/events.ts tells a process of its own changes, never of another's. The watcher is
// the one place that looks. A part of the live module holds a key (a build's log, the build
// feed) while it has streams open here, and lets go when the last one closes; for each held key
// the watcher runs its check every `everyMs` (and at once on an in-process event it asks for),
// one run at a time, however many streams share the key. Nothing runs while nothing is held.
// There is one watcher per application (AppContext.live, live.ts), closed when the daemon stops.
import type { EventBus, RoostEvent } from "../daemon/events.ts";

export interface Watch {
  /** How often the check runs while the key is held: the latency of another process's changes. */
  everyMs: number;
  /** Looks once. A failure is let go: the next run tries again, and no stream depends on one run. */
  check(): Promise<void>;
  /** An event of this process; true runs the check at once. */
  onEvent?(event: RoostEvent): boolean;
}

export interface Hold {
  /** Settles once the key's first check has run (at once when it ran before). */
  first: Promise<void>;
  /** Lets go of the key; the last hold stops its checks. Safe to call twice. */
  release(): void;
}

interface Held {
  watch: Watch;
  refs: number;
  timer: ReturnType<typeof setInterval>;
  first: Promise<void>;
  running: Promise<void> | null;
  again: boolean;
}

export class Watcher {
  readonly #held = new Map<string, Held>();
  #unsubscribe: (() => void) | null = null;
  #closed = false;

  constructor(readonly events: EventBus) {}

  isHeld(key: string): boolean {
    return this.#held.has(key);
  }

  /** Holds `key`; when nobody held it, `watch` starts (its first check at once), else the running one goes on. */
  hold(key: string, watch: Watch): Hold {
    if (this.#closed) return { first: Promise.resolve(), release() {} };
    let held = this.#held.get(key);
    if (!held) {
      const timer = setInterval(() => void this.check(key), watch.everyMs);
      (timer as { unref?: () => void }).unref?.();
      held = { watch, refs: 0, timer, first: Promise.resolve(), running: null, again: false };
      this.#held.set(key, held);
      this.#unsubscribe ??= this.events.subscribe((event) => this.#onEvent(event));
      held.first = this.check(key);
    }
    held.refs++;
    let released = false;
    const h = held;
    return {
      first: h.first,
      release: () => {
        if (released) return;
        released = true;
        if (--h.refs === 0 && this.#held.get(key) === h) this.#drop(key, h);
      },
    };
  }

  /** Runs the check of `key` now; a run already going is shared (and one more follows it). */
  check(key: string): Promise<void> {
    const held = this.#held.get(key);
    if (!held) return Promise.resolve();
    if (held.running) {
      held.again = true;
      return held.running;
    }
    const run = async (): Promise<void> => {
      do {
        held.again = false;
        try {
          await held.watch.check();
        } catch {
          // The next tick tries again.
        }
      } while (held.again && this.#held.get(key) === held);
      held.running = null;
    };
    return (held.running = run());
  }

  /** Stops every check and listens to no event any more (the daemon is stopping). */
  close(): void {
    this.#closed = true;
    for (const [key, held] of this.#held) this.#drop(key, held);
  }

  #onEvent(event: RoostEvent): void {
    for (const [key, held] of this.#held) if (held.watch.onEvent?.(event)) void this.check(key);
  }

  #drop(key: string, held: Held): void {
    clearInterval(held.timer);
    this.#held.delete(key);
    if (this.#held.size === 0) {
      this.#unsubscribe?.();
      this.#unsubscribe = null;
    }
  }
}
