// Shipping a job's output: every line is kept until the daemon acknowledges it, sent in order
// from the daemon's own next_line (so retries and gaps resolve themselves: 202 and 416 both say
// where to continue), in batches of at most ~256 KiB, at least every half second.
import type { Answer, RunnerApi } from "./client.ts";
import { HEADER } from "../lib/runners/protocol-wire.ts";

export interface ShippedLine {
  step: string;
  stream: "stdout" | "stderr" | "system";
  ts: number;
  text: string;
}

const BATCH_BYTES = 256 * 1024;
const FLUSH_MS = 500;

export class LogShipper {
  readonly #lines: ShippedLine[] = [];
  #acked = 0;
  #timer: ReturnType<typeof setInterval>;
  #sending: Promise<void> | null = null;
  /** The job is over on the daemon's side (finished or lost): nothing more will be accepted. */
  gone = false;

  constructor(
    api: RunnerApi,
    jobId: string,
    private readonly onStatus: (status: string) => void,
    /** Where the lines go: the job's log endpoint, or a publish's (runner/publish/). */
    private readonly append: (firstLine: number, lines: ShippedLine[]) => Promise<Answer<{ next_line: number }>> = (first, lines) =>
      api.appendLogs(jobId, first, lines),
  ) {
    this.#timer = setInterval(() => void this.flush(), FLUSH_MS);
  }

  add(line: Omit<ShippedLine, "ts">): void {
    this.#lines.push({ ...line, ts: Math.floor(Date.now() / 1000) });
  }

  get total(): number {
    return this.#lines.length;
  }

  flush(): Promise<void> {
    // A runner that stopped and could not hand its lines back in time gives up on them.
    this.#sending ??= this.#send()
      .catch(() => void (this.gone = true))
      .finally(() => (this.#sending = null));
    return this.#sending;
  }

  async #send(): Promise<void> {
    while (!this.gone && this.#acked < this.#lines.length) {
      const batch: ShippedLine[] = [];
      let bytes = 0;
      for (let i = this.#acked; i < this.#lines.length && bytes < BATCH_BYTES; i++) {
        batch.push(this.#lines[i]!);
        bytes += this.#lines[i]!.text.length + 64;
      }
      const answer = await this.append(this.#acked, batch);
      if (answer.ok || answer.status === 416) {
        this.#acked = answer.ok ? answer.body.next_line : Number(answer.headers.get(HEADER.logNextLine) ?? this.#acked);
        const status = answer.headers.get(HEADER.jobStatus);
        if (status) this.onStatus(status);
      } else {
        // 409 job_not_assigned, 410 job_finished, 401/403: the daemon will take no more lines.
        this.gone = true;
      }
    }
  }

  /** Sends everything, however long the daemon takes to come back. */
  async drain(): Promise<void> {
    while (!this.gone && this.#acked < this.#lines.length) await this.flush();
  }

  /** The daemon says it has only `nextLine` lines: resend from there. */
  rewind(nextLine: number): void {
    this.#acked = Math.min(this.#acked, nextLine);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
