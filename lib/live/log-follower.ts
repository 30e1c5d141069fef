// One reader of a build's log: joins the build's hub (hub.ts), catches up, then follows live
// (docs/runners.md "Live logs"). As the Durable Object chat demo's session does, it subscribes
// first and buffers what is pushed meanwhile, then catches up, then sends the buffered batches
// past what it already sent, so no line falls between the two and none goes twice. Catching up
// reads the hub's window when it reaches back far enough, else the database, one page per pull,
// so a slow client only lags. Live, the hub's pushes go straight to the client, until one does
// not follow on (lines this hub never carried) or the client has more than the stream's bound
// waiting: then the follower falls back to catching up when the client reads again.
import type { Db } from "../db/client.ts";
import { cutNotice, statsOf, type LogStats } from "../logs/store.ts";
import type { LogReader } from "../logs/archive.ts";
import type { MetricsRegistry } from "../daemon/metrics.ts";
import { concatBytes, encodeAfter, logFrame, statusFrame, statusRank, type HubPush, type HubStatus, type HubSubscriber, type LogHubStub } from "./hub.ts";
import { sseFrame } from "./sse-frame.ts";
import type { SseStream } from "./sse-stream.ts";

/** Lines read from the database per pull. */
const PAGE = 500;
const encoder = new TextEncoder();

type LogPush = Extract<HubPush, { kind: "log" }>;

export interface FollowerStart {
  db: Db;
  buildId: string;
  /** Where catching up reads the lines: the database, or the object store for an archived log. */
  log: LogReader;
  hub: LogHubStub;
  /** Where the client stands: the last seq it has. */
  cursor: number;
  /** The log as read when the request came in. */
  initialStats: LogStats;
  /** The build's status as read then (`ended` when finished and no runner is still sending). */
  known: HubStatus;
  /** Pages read from the database by followers catching up (roost_sse_catchup_reads_total). */
  catchUps: ReturnType<MetricsRegistry["counter"]>;
}

export class LogFollower implements HubSubscriber {
  #cursor: number;
  /** What is known of the build; moves forward only (statusRank), from the hub's pushes. */
  #known: HubStatus;
  #sentStatus = "";
  #markerSent: boolean;
  /** "catchup": reading from the window or the database, pushes buffered; "live": pushes go straight out. */
  #mode: "catchup" | "live" = "catchup";
  #pending: LogPush[] = [];
  #pendingBytes = 0;
  /** Set when the buffered pushes had a gap the window did not fill: the next step reads the database. */
  #readDatabase = false;
  /** The cursor at which an ended build's missing last lines were last looked for in the database. */
  #lookedAt = -1;
  /** Ends a pull waiting for something to do. */
  #wake: (() => void) | null = null;

  constructor(
    readonly stream: SseStream,
    readonly from: FollowerStart,
  ) {
    this.#cursor = from.cursor;
    this.#known = from.known;
    this.#markerSent = from.initialStats.head_last_seq === null || from.cursor > from.initialStats.head_last_seq;
    stream.onClose(() => this.#wake?.());
  }

  /** Joins the hub: pushes are buffered from here on, and the hub learns the status read at open. */
  async join(): Promise<void> {
    this.stream.onClose(await this.from.hub.subscribe(this));
    this.#learn(await this.from.hub.setStatus(this.#known));
  }

  push(frame: HubPush): void {
    if (!this.stream.open) return;
    if (frame.kind === "status") return this.#onStatus(frame.status);
    if (frame.last <= this.#cursor) return;
    if (this.#mode === "catchup") {
      // Past the bound the buffer is incomplete; the gap check on flushing sends the reader back to the database.
      if (this.#pendingBytes + frame.bytes.byteLength <= this.stream.options.maxQueuedBytes) {
        this.#pending.push(frame);
        this.#pendingBytes += frame.bytes.byteLength;
      }
      return this.#wake?.();
    }
    // A gap (lines this hub never carried) or a client not draining: stop pushing to it, catch
    // up from the window or the database when it reads again.
    if (frame.first > this.#cursor + 1 || this.stream.behind) return this.#fallBack();
    this.stream.write(this.#after(frame));
    this.#cursor = frame.last;
    this.#endIfDone();
  }

  /** One pull: runs when the client has taken everything queued; writes at least once, or waits. */
  async produce(): Promise<void> {
    while (this.stream.open) {
      if (this.stream.queued > 0) return; // pushes filled the queue meanwhile; pull runs again when it drains
      const status = this.#statusText();
      const caughtUp = this.#mode === "catchup" ? await this.#catchUp() : new Uint8Array(0);
      if (!this.stream.open) return;
      const wrote = status.length > 0 || caughtUp.byteLength > 0;
      if (wrote) this.stream.write(caughtUp.byteLength === 0 ? status : status ? concatBytes([encoder.encode(status), caughtUp]) : caughtUp);
      if (this.#endIfDone() || wrote) return;
      if (this.#mode === "catchup" || this.#missingLast()) continue;
      // Live and idle: wait for a gap, a status, the client falling behind or the end.
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = null;
    }
  }

  #onStatus(status: HubStatus): void {
    this.#learn(status);
    if (this.#mode === "live") {
      const text = this.#statusText();
      if (text) this.stream.write(text);
      if (this.#endIfDone() || !this.#missingLast()) return;
    }
    this.#wake?.();
  }

  #learn(s: HubStatus): void {
    if (statusRank(s) >= statusRank(this.#known)) this.#known = { ...s, last_seq: Math.max(s.last_seq, this.#known.last_seq) };
  }

  /** A `status` frame when the status changed since the last one sent, else "". */
  #statusText(): string {
    const s = JSON.stringify({ status: this.#known.status, exit_code: this.#known.exit_code });
    if (s === this.#sentStatus) return "";
    this.#sentStatus = s;
    return statusFrame(this.#known);
  }

  /** The final event once the build ended and every line went out; then the stream closes. */
  #endIfDone(): boolean {
    const k = this.#known;
    if (!k.ended || this.#cursor < k.last_seq || this.#mode !== "live") return false;
    this.stream.write(this.#statusText() + sseFrame("end", { status: k.status, exit_code: k.exit_code, last_seq: k.last_seq }));
    this.stream.close();
    return true;
  }

  /**
   * The build ended with lines this live follower was never pushed (not expected: the hub gets
   * lines before the status that ends them): look for them in the database, once per cursor.
   */
  #missingLast(): boolean {
    if (this.#mode !== "live" || !this.#known.ended || this.#cursor >= this.#known.last_seq || this.#lookedAt === this.#cursor) return false;
    this.#lookedAt = this.#cursor;
    this.#readDatabase = true;
    this.#fallBack();
    return true;
  }

  #fallBack(): void {
    this.#mode = "catchup";
    this.#clearPending();
    this.#wake?.();
  }

  #clearPending(): void {
    this.#pending = [];
    this.#pendingBytes = 0;
  }

  /** The frames of a batch past the cursor (the batch's own bytes when it starts after it). */
  #after(batch: LogPush): Uint8Array {
    return batch.first > this.#cursor ? batch.bytes : encodeAfter(batch.entries, this.#cursor);
  }

  /**
   * One step of catching up: frames after the cursor from the hub's window when it reaches back
   * that far, else one page from the database; then the buffered pushes. Turns live when nothing
   * is left to read.
   */
  async #catchUp(): Promise<Uint8Array> {
    // Pushes arriving from here on are buffered; older buffered ones are re-read below.
    this.#clearPending();
    const parts: Uint8Array[] = [];
    // The window serves only when it reaches back to the cursor and up to what the database held
    // at open (a hub that has not seen lines appended elsewhere, or none yet, does not).
    let window = this.#readDatabase ? null : await this.from.hub.since(this.#cursor);
    if (window && Math.max(window.last, this.#cursor) < this.from.initialStats.last_seq) window = null;
    let databaseDone = false;
    if (window) {
      if (window.last > this.#cursor) {
        parts.push(window.bytes);
        this.#cursor = window.last;
      }
    } else {
      const page = await this.#readPage();
      if (page.lines) parts.push(page.bytes);
      if (page.lines === PAGE || this.#cursor < this.from.initialStats.last_seq) return concatBytes(parts);
      databaseDone = page.lines === 0;
    }
    const flushed = this.#flushPending(databaseDone);
    this.#readDatabase = flushed === false;
    if (flushed !== false) {
      parts.push(...flushed);
      this.#mode = "live";
    }
    this.#clearPending();
    return concatBytes(parts);
  }

  /** The next page from the database, with the `truncated` event where the cap cut lines. */
  async #readPage(): Promise<{ lines: number; bytes: Uint8Array }> {
    const { db, buildId } = this.from;
    this.from.catchUps.inc({});
    const page = await this.from.log.page(this.#cursor, PAGE);
    const stats = page.length && !this.#markerSent ? await statsOf(db, buildId) : null;
    let text = "";
    for (const entry of page) {
      if (stats && !this.#markerSent && stats.head_last_seq !== null && stats.cut_lines > 0 && entry.seq > stats.head_last_seq) {
        this.#markerSent = true;
        text += sseFrame("truncated", { cut_lines: stats.cut_lines, cut_bytes: stats.cut_bytes, text: cutNotice(stats) });
      }
      text += logFrame(entry);
      this.#cursor = entry.seq;
    }
    return { lines: page.length, bytes: encoder.encode(text) };
  }

  /**
   * The buffered batches after the cursor; false at a gap (read again). `acrossGaps` when the
   * database has nothing after the cursor: the missing lines are not there to wait for.
   */
  #flushPending(acrossGaps: boolean): Uint8Array[] | false {
    const out: Uint8Array[] = [];
    for (const batch of this.#pending) {
      if (batch.last <= this.#cursor) continue;
      if (batch.first > this.#cursor + 1 && !acrossGaps) return false;
      out.push(this.#after(batch));
      this.#cursor = batch.last;
    }
    return out;
  }
}
