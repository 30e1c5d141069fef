// The per-build log hub, shaped like a Cloudflare Durable Object: one instance per build id,
// reached through a namespace/stub interface, with RPC-style methods (publish, setStatus, since,
// wait, lastSeq, subscribe) over its own state and no database. Under Bun the namespace keeps the
// instances in this process (LocalLogHubNamespace, AppContext.live.hubs); the same class runs as a
// real Durable Object in workerd (tests/lib/live/hub.test.ts), so this file imports nothing that
// needs Bun or a database. It is fed by appends (log-feed.ts); a stream joins it through a
// LogFollower (log-follower.ts), which catches up from this window or the database, then follows.
//
// The database stays the source of truth; the hub is the fast path for live viewers. Lines are
// published to it after their commit, each batch is encoded ONCE as Server-Sent Events frames,
// and the same bytes are pushed to every subscriber. While it has subscribers it keeps the recent
// frames in a bounded window (by bytes and by lines), so a reconnect or a reader that fell a
// little behind resumes from memory; anything older is read from the database by the reader.
// A hub never invents or reorders seqs: it accepts a line only past its last seq, and a batch
// that does not follow on (lines appended through another process, not yet seen here) resets the
// window, so a subscriber always sees the gap and catches up from the database.
import { sseFrame } from "./sse-frame.ts";

/** A committed log line as the stream shows it (docs/runners.md "Live logs"). */
export interface LogFrameEntry {
  seq: number;
  step: string;
  stream: string;
  ts: number;
  text: string;
}

/**
 * What a hub knows of its build: `ended` once the build is finished and no runner is still
 * sending, with the build's last seq at that moment.
 */
export interface HubStatus {
  status: string;
  exit_code: number | null;
  ended: boolean;
  last_seq: number;
}

/** A push to subscribers: a batch of lines (seqs first..last, encoded once) or a status change. */
export type HubPush =
  | { kind: "log"; first: number; last: number; bytes: Uint8Array; entries: readonly LogFrameEntry[] }
  | { kind: "status"; status: HubStatus; bytes: Uint8Array };

export interface HubSubscriber {
  push(frame: HubPush): void;
}

/** The frames after a seq, from the hub's window: bytes for (after, last]. */
export interface HubSince {
  last: number;
  bytes: Uint8Array;
}

export interface DurableObjectIdLike {
  toString(): string;
}

export interface DurableObjectStateLike {
  id: DurableObjectIdLike;
}

export interface HubLimits {
  windowBytes: number;
  windowLines: number;
}

/** 1 MiB or 5000 lines of recent frames per watched build, whichever is reached first. */
export const DEFAULT_HUB_LIMITS: HubLimits = { windowBytes: 1024 * 1024, windowLines: 5000 };

const encoder = new TextEncoder();

/** One `log` event, the exact wire format of the stream (id is the build-wide seq). */
export function logFrame(e: LogFrameEntry): string {
  return sseFrame("log", { seq: e.seq, step: e.step, stream: e.stream, ts: e.ts, text: e.text }, e.seq);
}

/** One `status` event (no id). */
export function statusFrame(s: { status: string; exit_code: number | null }): string {
  return sseFrame("status", { status: s.status, exit_code: s.exit_code });
}

/** Frames of the entries of a batch past `after` (a batch straddling a reader's cursor). */
export function encodeAfter(entries: readonly LogFrameEntry[], after: number): Uint8Array {
  let out = "";
  for (const e of entries) if (e.seq > after) out += logFrame(e);
  return encoder.encode(out);
}

const RANK: Record<string, number> = { queued: 0, running: 1 };
/** Statuses only move forward (queued → running → finished → ended); a stale report never undoes a newer one. */
export function statusRank(s: HubStatus): number {
  return (RANK[s.status] ?? 2) + (s.ended ? 1 : 0);
}

type Batch = { kind: "log"; first: number; last: number; bytes: Uint8Array; entries: readonly LogFrameEntry[] };

export class BuildLogHub {
  #lastSeq = 0;
  /** The window holds the frames of (#floor, #lastSeq]. */
  #floor = 0;
  #window: Batch[] = [];
  #windowBytes = 0;
  #windowLines = 0;
  #status: HubStatus | null = null;
  readonly #subscribers = new Set<HubSubscriber>();
  readonly #waiters = new Set<{ after: number; wake: (seq: number) => void }>();
  readonly #limits: HubLimits;

  constructor(
    readonly state: DurableObjectStateLike,
    limits: Partial<HubLimits> = {},
  ) {
    this.#limits = { ...DEFAULT_HUB_LIMITS, ...limits };
  }

  /** Subscribers and waiters: a hub with neither may be dropped by its namespace. */
  get busy(): number {
    return this.#subscribers.size + this.#waiters.size;
  }

  get subscriberCount(): number {
    return this.#subscribers.size;
  }

  lastSeq(): number {
    return this.#lastSeq;
  }

  /**
   * Lines just committed, oldest first. Lines at or below the last seq are ignored (a line
   * published twice, by the appending request and by a cross-process check, goes out once).
   * The rest is encoded once and pushed to every subscriber, if there are any. Returns the last seq.
   */
  publish(entries: readonly LogFrameEntry[]): number {
    const fresh = entries.filter((e) => e.seq > this.#lastSeq);
    if (fresh.length === 0) return this.#lastSeq;
    for (let i = 1; i < fresh.length; i++) if (fresh[i]!.seq <= fresh[i - 1]!.seq) throw new Error("log entries must be in seq order");
    if (this.#subscribers.size === 0) {
      // No stream to send the frames to or keep them for (one that subscribes later starts from
      // the database): only the position moves, and no frame is encoded (most appends: a build
      // nobody watches).
      this.#window = [];
      this.#windowBytes = 0;
      this.#windowLines = 0;
      this.#lastSeq = this.#floor = fresh[fresh.length - 1]!.seq;
      for (const w of [...this.#waiters]) if (this.#lastSeq > w.after) this.#waiters.delete(w), w.wake(this.#lastSeq);
      return this.#lastSeq;
    }
    const batch: Batch = { kind: "log", first: fresh[0]!.seq, last: fresh[fresh.length - 1]!.seq, bytes: encodeAfter(fresh, 0), entries: fresh };
    if (batch.first !== this.#lastSeq + 1) {
      // Not a continuation: the window starts over at this batch.
      this.#window = [];
      this.#windowBytes = 0;
      this.#windowLines = 0;
      this.#floor = batch.first - 1;
    }
    this.#lastSeq = batch.last;
    this.#window.push(batch);
    this.#windowBytes += batch.bytes.byteLength;
    this.#windowLines += fresh.length;
    while (this.#window.length > 1 && (this.#windowBytes > this.#limits.windowBytes || this.#windowLines > this.#limits.windowLines)) {
      const old = this.#window.shift()!;
      this.#windowBytes -= old.bytes.byteLength;
      this.#windowLines -= old.entries.length;
      this.#floor = old.last;
    }
    for (const s of this.#subscribers) s.push(batch);
    for (const w of [...this.#waiters]) if (this.#lastSeq > w.after) this.#waiters.delete(w), w.wake(this.#lastSeq);
    return this.#lastSeq;
  }

  /** A status report; pushed to subscribers when it moves the status forward. Returns the status now held. */
  setStatus(status: HubStatus): HubStatus {
    const current = this.#status;
    if (
      current &&
      (statusRank(status) < statusRank(current) ||
        (statusRank(status) === statusRank(current) &&
          status.status === current.status &&
          status.exit_code === current.exit_code &&
          status.last_seq <= current.last_seq))
    ) {
      return current;
    }
    const next = { status: status.status, exit_code: status.exit_code, ended: status.ended, last_seq: Math.max(status.last_seq, current?.last_seq ?? 0) };
    this.#status = next;
    const frame: HubPush = { kind: "status", status: next, bytes: encoder.encode(statusFrame(next)) };
    for (const s of this.#subscribers) s.push(frame);
    return next;
  }

  status(): HubStatus | null {
    return this.#status;
  }

  /**
   * The frames after `afterSeq` from the window, as one chunk, or null when the window does not
   * reach back that far (the reader then reads the database).
   */
  since(afterSeq: number): HubSince | null {
    if (afterSeq >= this.#lastSeq) return { last: afterSeq, bytes: new Uint8Array(0) };
    if (afterSeq < this.#floor) return null;
    const parts: Uint8Array[] = [];
    for (const b of this.#window) {
      if (b.last <= afterSeq) continue;
      parts.push(b.first > afterSeq ? b.bytes : encodeAfter(b.entries, afterSeq));
    }
    return { last: this.#lastSeq, bytes: concatBytes(parts) };
  }

  /** Resolves with the last seq once it passes `after`, or at `timeoutMs` (at most 60 s). */
  wait(after: number, timeoutMs: number): Promise<number> {
    if (this.#lastSeq > after) return Promise.resolve(this.#lastSeq);
    return new Promise<number>((resolve) => {
      const waiter = { after, wake: resolve };
      this.#waiters.add(waiter);
      setTimeout(
        () => {
          if (this.#waiters.delete(waiter)) resolve(this.#lastSeq);
        },
        Math.min(60_000, Math.max(0, timeoutMs)),
      );
    });
  }

  /** Pushes every later batch and status change to `subscriber` until the returned function is called. */
  subscribe(subscriber: HubSubscriber): () => void {
    this.#subscribers.add(subscriber);
    return () => {
      if (!this.#subscribers.delete(subscriber)) return;
      if (this.#subscribers.size === 0) {
        // Nobody left to serve from memory: keep no text.
        this.#window = [];
        this.#windowBytes = 0;
        this.#windowLines = 0;
        this.#floor = this.#lastSeq;
      }
    };
  }
}

/** The parts as one chunk (the part itself when there is one). */
export function concatBytes(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), (at += p.byteLength);
  return out;
}

/** The hub's methods as a stub offers them: every call is asynchronous, as an RPC call is. */
export interface LogHubStub {
  publish(entries: readonly LogFrameEntry[]): Promise<number>;
  setStatus(status: HubStatus): Promise<HubStatus>;
  status(): Promise<HubStatus | null>;
  since(afterSeq: number): Promise<HubSince | null>;
  wait(after: number, timeoutMs: number): Promise<number>;
  lastSeq(): Promise<number>;
  subscribe(subscriber: HubSubscriber): Promise<() => void>;
}

export interface LogHubNamespace {
  get(buildId: string): LogHubStub;
}

/** Idle hubs (no subscriber, no waiter) kept beyond this many are dropped, oldest first. */
const IDLE_HUBS_KEPT = 1000;

/** The in-process namespace: one hub per build id; calls are direct, pushes synchronous. */
export class LocalLogHubNamespace implements LogHubNamespace {
  readonly #hubs = new Map<string, BuildLogHub>();

  constructor(readonly limits: Partial<HubLimits> = {}) {}

  #hub(buildId: string): BuildLogHub {
    let hub = this.#hubs.get(buildId);
    if (!hub) {
      this.#hubs.set(buildId, (hub = new BuildLogHub({ id: { toString: () => buildId } }, this.limits)));
      if (this.#hubs.size > IDLE_HUBS_KEPT) {
        for (const [id, h] of this.#hubs) {
          if (this.#hubs.size <= IDLE_HUBS_KEPT) break;
          if (h.busy === 0 && id !== buildId) this.#hubs.delete(id);
        }
      }
    }
    return hub;
  }

  get(buildId: string): LogHubStub {
    const hub = () => this.#hub(buildId);
    return {
      publish: async (entries) => hub().publish(entries),
      setStatus: async (status) => hub().setStatus(status),
      status: async () => hub().status(),
      since: async (afterSeq) => hub().since(afterSeq),
      wait: (after, timeoutMs) => hub().wait(after, timeoutMs),
      lastSeq: async () => hub().lastSeq(),
      subscribe: async (subscriber) => hub().subscribe(subscriber),
    };
  }

  /** The hub itself, for this process's own bookkeeping (how many subscribers it has). */
  local(buildId: string): BuildLogHub | undefined {
    return this.#hubs.get(buildId);
  }

  get size(): number {
    return this.#hubs.size;
  }
}
